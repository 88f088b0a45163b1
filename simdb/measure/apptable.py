"""`simdb bench --app-table`: near-duplicate search in an application's own table, measured.

A scratch `articles(id bigserial, body text, fp bigint)` table of ~2 KB texts stands for the
application's. In the same run: the first fill of its fingerprints against `ingest` of the same
texts; a near query on an index in the table against the same rows in simdb's own table and a
query written by hand on the table; a single-row INSERT and UPDATE of the application with
simdb's triggers and without; a sync with nothing to do and one after a round of inserts,
updates and deletes; and the lag from a commit to a findable row with `sync --watch`.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field

import psycopg
from psycopg import sql

from simdb import attach, index, ingest, intable, readers
from simdb.bits import to_signed
from simdb.connection import Connection
from simdb.errors import SimdbError
from simdb.measure.bench import best_rounds, machine, percentile
from simdb.modes import Index, SimhashSpec

TABLE = "simdb_bench_articles"
OWN, IN_TABLE = "simdb_bench_own", "simdb_bench_in"
WORDS = 5000
WATCH_INTERVAL = 10.0  # sync --watch's timer: the idle window measured ends before it fires


@dataclass
class AppTableBench:
    """The figures of one run (milliseconds unless named otherwise)."""

    rows: int
    text_mb: float
    server: str
    jobs: int
    fill_s: float
    ingest_s: float
    btree_bytes_per_row: float
    near_own_p50: float
    near_in_table_p50: float
    near_hand_p50: float
    queries: int
    insert_plain_p50: float
    insert_triggers_p50: float
    update_plain_p50: float
    update_triggers_p50: float
    writes: int
    sync_idle_p50: float
    changes: int
    sync_changes_s: float
    lag_p50_s: float
    lag_p99_s: float
    lags: int
    idle_reads: int
    machine: dict[str, object] = field(default_factory=machine)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def lines(self) -> list[str]:
        host = self.machine
        mb = self.text_mb
        return [
            f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}, {self.server}",
            f"table: {self.rows} rows, {mb:.0f} MB of text; index in its fp column:"
            f" {self.btree_bytes_per_row:.0f} bytes/row of B-trees",
            f"first fill (sync, --jobs {self.jobs}): {self.fill_s:.1f} s, {mb / self.fill_s:.1f} MB/s;"
            f" ingest of the same texts from JSONL: {self.ingest_s:.1f} s, {mb / self.ingest_s:.1f} MB/s"
            f" (fill at x{self.ingest_s / self.fill_s:.2f} of ingest's speed)",
            f"near p50 over {self.queries} queries: in the table {self.near_in_table_p50:.3f} ms,"
            f" simdb's own table {self.near_own_p50:.3f} ms"
            f" (x{self.near_in_table_p50 / self.near_own_p50:.2f}),"
            f" written by hand on the table {self.near_hand_p50:.3f} ms"
            f" (x{self.near_in_table_p50 / self.near_hand_p50:.2f})",
            f"application writes p50 over {self.writes} single-row statements:"
            f" INSERT {self.insert_triggers_p50:.3f} ms with simdb's triggers,"
            f" {self.insert_plain_p50:.3f} ms without"
            f" (x{self.insert_triggers_p50 / self.insert_plain_p50:.2f}); UPDATE of the text"
            f" {self.update_triggers_p50:.3f} ms with, {self.update_plain_p50:.3f} ms without"
            f" (x{self.update_triggers_p50 / self.update_plain_p50:.2f})",
            f"sync with nothing to do: {self.sync_idle_p50:.2f} ms (p50); after {self.changes} inserts,"
            f" {self.changes} text updates and {self.changes} deletes: {self.sync_changes_s:.2f} s,"
            f" {100 * self.sync_changes_s / self.fill_s:.1f}% of the first fill",
            f"sync --watch, commit to findable over {self.lags} commits: p50 {self.lag_p50_s:.3f} s,"
            f" p99 {self.lag_p99_s:.3f} s; table reads while idle for 5 s: {self.idle_reads}",
        ]


def _texts(rng: random.Random, count: int) -> Iterator[str]:
    """Texts of about 2 KB: words drawn from a vocabulary of WORDS, so shingles repeat as in prose."""
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 10))) for _ in range(WORDS)
    ]
    for _ in range(count):
        yield " ".join(rng.choices(vocabulary, k=300))


@contextmanager
def scratch(conn: Connection) -> Iterator[None]:
    """The scratch table and indexes are dropped afterwards, whatever happens."""
    try:
        yield
    finally:
        for name in (OWN, IN_TABLE):
            with suppress(SimdbError, psycopg.Error):  # not made, or half made: drop what there is
                index.drop(conn, name)
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TABLE)))


def bench_app_table(
    conn: Connection,
    dsn: str,
    *,
    rows: int,
    queries: int,
    jobs: int,
    progress: Callable[[str], None],
    writes: int = 2000,
    changes: int = 1000,
    lags: int = 200,
) -> AppTableBench:
    """Measure an index in an application's table; see the module."""
    rng = random.Random(0)  # noqa: S311 (texts and probes, not secrets)
    table = sql.Identifier(TABLE)
    with scratch(conn):
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
        conn.execute(
            sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, body text, fp bigint)").format(table)
        )
        progress(f"writing {rows} texts of ~2 KB into {TABLE}")
        with tempfile.TemporaryDirectory(prefix="simdb-bench-") as folder:
            jsonl = os.path.join(folder, "texts.jsonl")
            with (
                conn.cursor().copy(sql.SQL("COPY {} (body) FROM STDIN").format(table)) as copy,
                open(jsonl, "w") as out,
            ):
                for number, text in enumerate(_texts(rng, rows), 1):
                    copy.write_row((text,))
                    out.write(json.dumps({"key": str(number), "text": text}) + "\n")
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
            text_mb = _number(conn, sql.SQL("SELECT sum(octet_length(body)) FROM {}").format(table)) / 1e6
            progress("ingest of the same texts from JSONL into simdb's own table")
            own = index.create(conn, OWN, SimhashSpec(), expected_rows=rows)
            began = time.perf_counter()
            ingest.ingest(conn, own, readers.read([jsonl]), jobs=jobs)
            ingest_s = time.perf_counter() - began
        progress("the first fill of the table's fp column")
        made = intable.attach_in_table(
            conn, IN_TABLE, f"public.{TABLE}", "id", "fp", "body", expected_rows=rows
        )
        began = time.perf_counter()
        attach.sync(conn, IN_TABLE)
        fill_s = time.perf_counter() - began
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
        btree_bytes = _btree_bytes(conn, made)
        progress(f"{queries} near queries, three ways")
        near = _near_times(conn, own, made, rng, queries)
        progress(f"{writes} single-row INSERTs and UPDATEs with and without simdb's triggers")
        written = _write_times(conn, rng, writes)
        idle = [_timed(lambda: attach.sync(conn, IN_TABLE)) for _ in range(50)]
        progress(f"{changes} inserts, updates and deletes, then a sync")
        _changes(conn, rng, changes)
        sync_changes_s = _timed(lambda: attach.sync(conn, IN_TABLE)) / 1000
        progress(f"{lags} commits under sync --watch")
        lag, idle_reads = _watch_lag(conn, dsn, rng, lags)
        server = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        return AppTableBench(
            rows=rows,
            text_mb=text_mb,
            server=f"PostgreSQL {server}",
            jobs=jobs,
            fill_s=fill_s,
            ingest_s=ingest_s,
            btree_bytes_per_row=btree_bytes / rows,
            near_own_p50=near["own"],
            near_in_table_p50=near["in_table"],
            near_hand_p50=near["hand"],
            queries=queries,
            insert_plain_p50=written["insert plain"],
            insert_triggers_p50=written["insert triggers"],
            update_plain_p50=written["update plain"],
            update_triggers_p50=written["update triggers"],
            writes=writes,
            sync_idle_p50=statistics.median(idle),
            changes=changes,
            sync_changes_s=sync_changes_s,
            lag_p50_s=percentile(lag, 0.5),
            lag_p99_s=percentile(lag, 0.99),
            lags=lags,
            idle_reads=idle_reads,
        )


def _number(conn: Connection, statement: sql.Composed) -> float:
    row = conn.execute(statement).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def _timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def _btree_bytes(conn: Connection, made: Index) -> int:
    """The size of simdb's B-trees on the table (the sketch's, not the key's or the unfilled one's)."""
    names = [f"simdb_{made.name}_{column}" for column in made.columns]
    row = conn.execute(
        "SELECT sum(pg_relation_size(c.oid)) FROM pg_class AS c WHERE c.relname = ANY(%s)", (names,)
    ).fetchone()
    return int(row[0]) if row and row[0] else 0


def _near_times(
    conn: Connection, own: Index, made: Index, rng: random.Random, queries: int
) -> dict[str, float]:
    """p50 of the same queries: the in-table index's near function, simdb's own table's, and the
    statement an engineer would write on the table (the same probes, no view, no function)."""
    stored = [
        int(v)
        for (v,) in conn.execute(
            sql.SQL("SELECT fp FROM {} TABLESAMPLE SYSTEM (1) WHERE fp IS NOT NULL LIMIT %s").format(
                sql.Identifier(TABLE)
            ),
            (queries,),
        )
    ]
    probes = [to_signed(_flipped(rng, value & (2**64 - 1), rng.randint(0, 3))) for value in stored]
    k = 3
    fp = sql.SQL("t.fp")
    given = sql.SQL("%s::bigint")
    hand = sql.SQL(
        "SELECT t.id FROM {table} AS t WHERE ({probes}) AND bit_count((t.fp # %s::bigint)::bit(64)) <= %s"
    ).format(
        table=sql.Identifier(TABLE),
        probes=sql.SQL(" OR ").join(
            sql.SQL("{} = {}").format(row, query)
            for row, query in zip(made.btree_keys(fp), made.btree_keys(given), strict=True)
        ),
    )
    tables = len(made.columns)
    kinds = {
        "own": (sql.SQL("SELECT * FROM {}(%s, %s)").format(own.near_function), [(p, k) for p in probes]),
        "in_table": (
            sql.SQL("SELECT * FROM {}(%s, %s)").format(made.near_function),
            [(p, k) for p in probes],
        ),
        "hand": (hand, [(*([p] * tables), p, k) for p in probes]),
    }
    best = best_rounds(conn, kinds, 3)  # type: ignore[arg-type]
    answers = {kind: found for kind, (_, found) in best.items()}
    if answers["own"] != answers["in_table"] or answers["hand"] != answers["in_table"]:
        raise RuntimeError("the three ways found different rows: the benchmark is broken")
    return {kind: statistics.median(times) for kind, (times, _) in best.items()}


def _flipped(rng: random.Random, value: int, count: int) -> int:
    for bit in rng.sample(range(64), count):
        value ^= 1 << bit
    return value


def _write_times(conn: Connection, rng: random.Random, writes: int) -> dict[str, float]:
    """p50 of single-row INSERTs and UPDATEs of the text, each its own transaction, in blocks that
    alternate between simdb's triggers enabled and disabled (so drift hits both)."""
    table = sql.Identifier(TABLE)
    insert = sql.SQL("INSERT INTO {} (body) VALUES (%s)").format(table)
    update = sql.SQL("UPDATE {} SET body = %s WHERE id = %s").format(table)
    high = int(_number(conn, sql.SQL("SELECT max(id) FROM {}").format(table)))
    texts = list(_texts(rng, 50))
    times: dict[str, list[float]] = {
        f"{what} {how}": [] for what in ("insert", "update") for how in ("plain", "triggers")
    }
    for _block in range(10):
        for how, switch in (("plain", "DISABLE"), ("triggers", "ENABLE")):
            conn.execute(sql.SQL("ALTER TABLE {} {} TRIGGER USER").format(table, sql.SQL(switch)))
            for _ in range(writes // 20):
                times[f"insert {how}"].append(_statement_ms(conn, insert, (rng.choice(texts),)))
                arguments = (rng.choice(texts), rng.randint(1, high))
                times[f"update {how}"].append(_statement_ms(conn, update, arguments))
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(table))
    attach.sync(conn, IN_TABLE)
    return {kind: statistics.median(values) for kind, values in times.items()}


def _statement_ms(conn: Connection, statement: sql.Composed, arguments: tuple[object, ...]) -> float:
    """Milliseconds of one prepared statement in its own transaction (autocommit), client-side."""
    began = time.perf_counter()
    conn.execute(statement, arguments, prepare=True)
    return (time.perf_counter() - began) * 1000


def _changes(conn: Connection, rng: random.Random, count: int) -> None:
    table = sql.Identifier(TABLE)
    texts = list(_texts(rng, count))
    high = int(_number(conn, sql.SQL("SELECT max(id) FROM {}").format(table)))
    with conn.transaction():
        with conn.cursor().copy(sql.SQL("COPY {} (body) FROM STDIN").format(table)) as copy:
            for text in texts:
                copy.write_row((text,))
        keys = rng.sample(range(1, high), 2 * count)
        conn.execute(
            sql.SQL(
                "UPDATE {} AS t SET body = u.body FROM unnest(%s::bigint[], %s::text[]) AS u(id, body)"
                " WHERE t.id = u.id"
            ).format(table),
            (keys[:count], texts),
        )
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(table), (keys[count:],))


def _watch_lag(conn: Connection, dsn: str, rng: random.Random, lags: int) -> tuple[list[float], int]:
    """Seconds from each commit of a new row to the row being found by key, with `sync --watch`
    running on a connection of its own; and the table's reads while nothing is written for 5 s
    (from 1 s after the last commit: before the timer of --interval WATCH_INTERVAL fires)."""
    stop = threading.Event()
    started = threading.Event()

    def watching() -> None:
        with psycopg.connect(dsn, autocommit=True) as watcher:

            def report(_: object) -> None:
                started.set()
                if stop.is_set():
                    raise SystemExit

            with suppress(SystemExit):
                attach.watch(watcher, IN_TABLE, WATCH_INTERVAL, report)

    thread = threading.Thread(target=watching, daemon=True)
    thread.start()
    started.wait(60)
    table = sql.Identifier(TABLE)
    texts = list(_texts(rng, 20))
    found = sql.SQL("SELECT 1 FROM {} WHERE id = %s AND fp IS NOT NULL").format(table)
    lag = []
    for _ in range(lags):
        (key,) = conn.execute(
            sql.SQL("INSERT INTO {} (body) VALUES (%s) RETURNING id").format(table), (rng.choice(texts),)
        ).fetchone()  # type: ignore[misc]
        committed = time.perf_counter()
        while conn.execute(found, (key,), prepare=True).fetchone() is None:
            time.sleep(0.002)
        lag.append(time.perf_counter() - committed)
    time.sleep(1.0)
    before = _reads(conn)
    time.sleep(5.0)
    idle_reads = _reads(conn) - before
    stop.set()
    conn.execute(sql.SQL("INSERT INTO {} (body) VALUES ('wake the watcher to stop it')").format(table))
    thread.join(30)
    return lag, idle_reads


def _reads(conn: Connection) -> int:
    """Scans of the table so far (sequential and by index), as PostgreSQL counts them."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = %s",
        (TABLE,),
    ).fetchone()
    return int(row[0]) if row else 0
