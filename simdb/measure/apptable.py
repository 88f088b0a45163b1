"""`simdb bench --app-table`: near-duplicate search in an application's own table, measured.

A scratch `articles(id bigserial, body text, fp bigint)` table of ~2 KB texts stands for the
application's, with two indexes on it at once: one in its `fp` column (simdb fills it from the
text) and a side table that follows `body` through triggers and a queue. In the same run:
- the first fill of each, against `ingest` of the same texts from JSONL (same --jobs);
- near p50 on the in-table index, on simdb's own table of the same fingerprints, and by a query
  written by hand on the table (answers checked equal);
- a single-row INSERT and UPDATE of the application with each index's triggers and with none;
- a sync with nothing to do; one after inserts, updates and deletes, against a full re-read;
- the lag from a commit to a findable row under `sync --watch`, and the table's reads while idle:
  commits one after another, each once the last is found, or (`writes_per_second`) an application
  that commits single-row inserts at a steady rate while a reader looks for each row.
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

from simdb import ingest
from simdb.db.connection import Connection
from simdb.errors import SimdbError
from simdb.follow import app_column, keep
from simdb.index import lifecycle as indexes
from simdb.index import names
from simdb.index.modes import Index, SimhashSpec
from simdb.measure.bench import best_rounds, machine, percentile
from simdb.sketch.bits import to_signed
from simdb.sources import readers

TABLE = "simdb_bench_articles"
OWN, IN_TABLE, SIDE = "simdb_bench_own", "simdb_bench_in", "simdb_bench_side"
WORDS = 5000
WATCH_INTERVAL = 30.0  # sync --watch's timer: the idle window measured ends before it fires
IDLE_S = 5.0
SETTLE_S = 12.0  # before the idle window: PostgreSQL reports an idle session's last reads within 10 s
WRITERS = 4  # the application's connections that commit at --writes-per-second


@dataclass
class Way:
    """The figures of one way into the table (milliseconds unless named otherwise)."""

    label: str
    fill_s: float
    fill_temp_mb: float  # temporary files PostgreSQL wrote during the first fill
    insert_p50: float
    update_p50: float
    sync_idle_p50: float
    sync_changes_s: float
    full_s: float  # what re-reading the whole table costs this way (a full sync / the first fill)
    lag_p50_s: float
    lag_p99_s: float
    idle_reads: int


@dataclass
class AppTableBench:
    """The figures of one run."""

    rows: int
    text_mb: float
    server: str
    index: str  # the simhash index's parameters, as `simdb list` says them
    jobs: int
    ingest_s: float
    btree_bytes_per_row: float
    queries: int
    near_own_p50: float
    near_in_table_p50: float
    near_hand_p50: float
    writes: int
    insert_plain_p50: float
    update_plain_p50: float
    changes: int
    lags: int
    ways: list[Way]
    writes_per_second: float | None = None  # the rate asked for the lag; None: one commit at a time
    achieved_per_second: float | None = None  # the rate the application's commits reached (the lowest)
    machine: dict[str, object] = field(default_factory=machine)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def lines(self) -> list[str]:
        host, mb = self.machine, self.text_mb
        lines = [
            f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}, {self.server}",
            f"table: {self.rows} rows, {mb:.0f} MB of text; the index in its fp column ({self.index}):"
            f" {self.btree_bytes_per_row:.0f} bytes/row of B-trees",
            f"ingest of the same texts from JSONL into simdb's own table (--jobs {self.jobs}):"
            f" {self.ingest_s:.1f} s, {mb / self.ingest_s:.1f} MB/s",
            f"near p50 over {self.queries} queries: in the table {self.near_in_table_p50:.3f} ms,"
            f" simdb's own table {self.near_own_p50:.3f} ms"
            f" (x{self.near_in_table_p50 / self.near_own_p50:.2f}), by hand on the table"
            f" {self.near_hand_p50:.3f} ms (x{self.near_in_table_p50 / self.near_hand_p50:.2f})",
            f"single-row writes of the application, p50 of {self.writes} each, without simdb's"
            f" triggers: INSERT {self.insert_plain_p50:.3f} ms, UPDATE of the text"
            f" {self.update_plain_p50:.3f} ms",
        ]
        paced = ""
        if self.writes_per_second is not None:
            paced = (
                f" while the application commits {self.writes_per_second:g} single-row INSERTs/s"
                f" (reached {self.achieved_per_second or 0:.0f}/s)"
            )
        for way in self.ways:
            lines += [
                f"{way.label}: first fill {way.fill_s:.1f} s, {mb / way.fill_s:.1f} MB/s"
                f" (x{self.ingest_s / way.fill_s:.2f} of ingest's speed), {way.fill_temp_mb:.1f} MB of"
                f" temporary files; with its triggers INSERT"
                f" {way.insert_p50:.3f} ms (x{way.insert_p50 / self.insert_plain_p50:.2f}), UPDATE"
                f" {way.update_p50:.3f} ms (x{way.update_p50 / self.update_plain_p50:.2f})",
                f"{way.label}: sync with nothing to do {way.sync_idle_p50:.2f} ms (p50); after"
                f" {self.changes} inserts, {self.changes} text updates and {self.changes} deletes"
                f" {way.sync_changes_s:.2f} s, {100 * way.sync_changes_s / way.full_s:.1f}% of a full"
                f" re-read ({way.full_s:.1f} s); sync --watch, commit to findable over {self.lags}"
                f" commits{paced}: p50 {way.lag_p50_s:.3f} s, p99 {way.lag_p99_s:.3f} s; reads of the table"
                f" while idle for {IDLE_S:.0f} s: {way.idle_reads}",
            ]
        return lines


def _texts(rng: random.Random, count: int) -> Iterator[str]:
    """Texts of about 2 KB: words drawn from a vocabulary of WORDS, so shingles repeat as in prose."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(WORDS)]
    for _ in range(count):
        yield " ".join(rng.choices(vocabulary, k=300))


@contextmanager
def scratch(conn: Connection) -> Iterator[None]:
    """The scratch table and indexes are dropped afterwards, whatever happens."""
    try:
        yield
    finally:
        for name in (OWN, IN_TABLE, SIDE):
            with suppress(SimdbError, psycopg.Error):  # not made, or half made: drop what there is
                indexes.drop(conn, name)
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TABLE)))


def bench_app_table(
    conn: Connection,
    dsn: str,
    *,
    rows: int,
    queries: int,
    jobs: int,
    progress: Callable[[str], None],
    spec: SimhashSpec | None = None,
    writes: int = 2000,
    changes: int = 1000,
    lags: int = 200,
    writes_per_second: float | None = None,
) -> AppTableBench:
    """Measure both ways into an application's table; see the module. `spec`: the three indexes'
    (default: what `simdb attach` makes, SimhashSpec.newest()). `writes_per_second`: the lag is
    measured while the application commits at that rate (`lags` commits)."""
    spec = spec or SimhashSpec.newest()
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
            own = indexes.create(conn, OWN, spec, expected_rows=rows)
            began = time.perf_counter()
            ingest.ingest(conn, own, readers.read([jsonl]), jobs=jobs)
            ingest_s = time.perf_counter() - began
        table_name = f"public.{TABLE}"
        progress("the first fill of the table's fp column")
        index = app_column.attach_in_table(  # as `simdb attach` does before its first fill
            conn, IN_TABLE, table_name, "id", "fp", "body", spec=spec, expected_rows=rows, defer_btrees=True
        )
        fill_in, temp_in = _filled(conn, IN_TABLE, jobs)
        progress("the first fill of a side table with triggers")
        keep.attach(conn, SIDE, table_name, "id", "body", spec=spec, expected_rows=rows)
        fill_side, temp_side = _filled(conn, SIDE, jobs)
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
        progress(f"{queries} near queries, three ways")
        near = _near_times(conn, own, index, rng, queries)
        progress(f"{writes} single-row INSERTs and UPDATEs with each index's triggers and with none")
        triggers: dict[str, list[sql.Identifier]] = {
            "none": [],
            IN_TABLE: [
                sql.Identifier(names.app_trigger_name(IN_TABLE, what)) for what in ("claim", "clear", "wake")
            ],
            SIDE: [names.capture_trigger(SIDE, event) for event in names.CAPTURE_EVENTS],
        }
        written = _write_times(conn, rng, writes, triggers)
        ways = []
        rates: list[float] = []
        for name, label, fill_s, temp_mb in (
            (IN_TABLE, "in its fp column", fill_in, temp_in),
            (SIDE, "side table with triggers", fill_side, temp_side),
        ):
            progress(f"{label}: syncs, and {lags} commits under sync --watch")
            keep.sync(conn, name, jobs=jobs)  # (what the writes above left)
            idle = [_timed(lambda name=name: keep.sync(conn, name)) for _ in range(50)]  # type: ignore[misc]
            _changes(conn, rng, changes)
            changed_s = _timed(lambda name=name: keep.sync(conn, name, jobs=jobs)) / 1000  # type: ignore[misc]
            full_s = _full_read_s(conn, name, fill_s, jobs)
            lag, idle_reads = _watch_lag(conn, dsn, name, rng, lags, writes_per_second, rates)
            ways.append(
                Way(
                    label=label,
                    fill_s=fill_s,
                    fill_temp_mb=temp_mb,
                    insert_p50=written[f"insert {name}"],
                    update_p50=written[f"update {name}"],
                    sync_idle_p50=statistics.median(idle),
                    sync_changes_s=changed_s,
                    full_s=full_s,
                    lag_p50_s=percentile(lag, 0.5),
                    lag_p99_s=percentile(lag, 0.99),
                    idle_reads=idle_reads,
                )
            )
        server = conn.execute("SHOW server_version").fetchone()
        return AppTableBench(
            rows=rows,
            text_mb=text_mb,
            server=f"PostgreSQL {server[0] if server else '?'}",
            index=index.summary,
            jobs=jobs,
            ingest_s=ingest_s,
            btree_bytes_per_row=_btree_bytes(conn, index) / rows,
            queries=queries,
            near_own_p50=near["own"],
            near_in_table_p50=near["in_table"],
            near_hand_p50=near["hand"],
            writes=writes,
            insert_plain_p50=written["insert none"],
            update_plain_p50=written["update none"],
            changes=changes,
            lags=lags,
            ways=ways,
            writes_per_second=writes_per_second,
            achieved_per_second=min(rates) if rates else None,
        )


def _filled(conn: Connection, name: str, jobs: int) -> tuple[float, float]:
    """Seconds of index NAME's first fill, and MB of temporary files the server wrote meanwhile."""
    before = _temp_bytes(conn)
    seconds = _timed(lambda: keep.sync(conn, name, jobs=jobs)) / 1000
    return seconds, (_temp_bytes(conn) - before) / 1e6


def _temp_bytes(conn: Connection) -> int:
    """Bytes of temporary files written in this database so far (pg_stat_database), after this
    session's own counts are flushed (a transaction that ends a second after the last flush)."""
    time.sleep(1.1)
    conn.execute("SELECT 1")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()"
    ).fetchone()
    return int(row[0]) if row else 0


def _full_read_s(conn: Connection, name: str, fill_s: float, jobs: int) -> float:
    """A full re-read this way: `sync --full` of the side table (a compare of every row's MD5);
    for the fp column, whose sync never re-reads the table, its first fill."""
    if name != SIDE:
        return fill_s
    return _timed(lambda: keep.sync(conn, name, full=True, jobs=jobs)) / 1000


def _number(conn: Connection, statement: sql.Composed) -> float:
    row = conn.execute(statement).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


def _timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def _btree_bytes(conn: Connection, index: Index) -> int:
    """The size of simdb's B-trees on the sketch column (not the key's or the unfilled one's)."""
    btrees = [names.app_btree_name(index.name, column) for column in index.columns]
    row = conn.execute(
        "SELECT sum(pg_relation_size(c.oid)) FROM pg_class AS c WHERE c.relname = ANY(%s)", (btrees,)
    ).fetchone()
    return int(row[0]) if row and row[0] else 0


def _near_times(
    conn: Connection, own: Index, index: Index, rng: random.Random, queries: int
) -> dict[str, float]:
    """p50 of the same queries: the in-table index's near function, simdb's own table's, and the
    statement an engineer would write on the table (the same probes, no view, no function)."""
    sample = sql.SQL("SELECT fp FROM {} WHERE fp IS NOT NULL ORDER BY random() LIMIT %s").format(
        sql.Identifier(TABLE)
    )
    stored = [int(value) for (value,) in conn.execute(sample, (queries,))]
    k = int(index.cutoff())  # the index's own k
    probes = [to_signed(_flipped(rng, value & (2**64 - 1), rng.randint(0, k))) for value in stored]
    # (a table's key may read the fingerprint more than once: named parameters, each given once)
    fp, given = sql.SQL("t.fp"), sql.SQL("{}::bigint").format(sql.Placeholder("fp"))
    hand = sql.SQL(
        "SELECT t.id FROM {table} AS t WHERE ({probes}) AND bit_count((t.fp # {given})::bit(64)) <= {k}"
    ).format(
        table=sql.Identifier(TABLE),
        probes=sql.SQL(" OR ").join(
            sql.SQL("{} = {}").format(row, query)
            for row, query in zip(index.btree_keys(fp), index.btree_keys(given), strict=True)
        ),
        given=given,
        k=sql.Placeholder("k"),
    )
    near = sql.SQL("SELECT * FROM {}(%s, %s)")
    kinds = {
        "own": (near.format(own.near_function), [(p, k) for p in probes]),
        "in_table": (near.format(index.near_function), [(p, k) for p in probes]),
        "hand": (hand, [{"fp": p, "k": k} for p in probes]),
    }
    best = best_rounds(conn, kinds, 3)  # type: ignore[arg-type]
    answers = {kind: found for kind, (_, found) in best.items()}
    if not answers["own"] == answers["in_table"] == answers["hand"]:
        raise SimdbError("the three ways of querying found different rows", "report this: a bug in bench")
    return {kind: statistics.median(times) for kind, (times, _) in best.items()}


def _flipped(rng: random.Random, value: int, count: int) -> int:
    for bit in rng.sample(range(64), count):
        value ^= 1 << bit
    return value


def _write_times(
    conn: Connection, rng: random.Random, writes: int, triggers: dict[str, list[sql.Identifier]]
) -> dict[str, float]:
    """p50 of single-row INSERTs and UPDATEs of the text, each its own transaction, with only the
    triggers of one index enabled (or none), in blocks that take turns so drift hits each alike."""
    table = sql.Identifier(TABLE)
    insert = sql.SQL("INSERT INTO {} (body) VALUES (%s)").format(table)
    update = sql.SQL("UPDATE {} SET body = %s WHERE id = %s").format(table)
    high = int(_number(conn, sql.SQL("SELECT max(id) FROM {}").format(table)))
    texts = list(_texts(rng, 50))
    times: dict[str, list[float]] = {f"{what} {way}": [] for what in ("insert", "update") for way in triggers}
    blocks = 10
    for _ in range(blocks):
        for way, enabled in triggers.items():
            conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
            for trigger in enabled:
                conn.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER {}").format(table, trigger))
            for _ in range(writes // blocks):
                times[f"insert {way}"].append(_statement_ms(conn, insert, (rng.choice(texts),)))
                times[f"update {way}"].append(
                    _statement_ms(conn, update, (rng.choice(texts), rng.randint(1, high)))
                )
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(table))
    keep.sync(conn, SIDE, full=True)  # (the writes made with its triggers off)
    return {kind: statistics.median(values) for kind, values in times.items()}


def _statement_ms(conn: Connection, statement: sql.Composed, arguments: tuple[object, ...]) -> float:
    """Milliseconds of one prepared statement in its own transaction (autocommit), client-side."""
    began = time.perf_counter()
    conn.execute(statement, arguments, prepare=True)
    return (time.perf_counter() - began) * 1000


def _changes(conn: Connection, rng: random.Random, count: int) -> None:
    """`count` inserts, updates of the text and deletes, in one transaction."""
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


def _watch_lag(
    conn: Connection,
    dsn: str,
    name: str,
    rng: random.Random,
    lags: int,
    per_second: float | None = None,
    rates: list[float] | None = None,
) -> tuple[list[float], int]:
    """Seconds from each commit of a new row to the row being found in index NAME by key, with
    `sync --watch` running on connections of its own (one commit at a time, or `per_second`:
    paced commits, their rate reached added to `rates`); and the table's reads while nothing is
    written for IDLE_S seconds (from SETTLE_S after the last commit, before the timer fires)."""
    stop = threading.Event()
    started = threading.Event()

    def watching() -> None:
        with psycopg.connect(dsn, autocommit=True) as watcher:
            keep.watch(watcher, name, WATCH_INTERVAL, lambda _: started.set(), stop=stop.is_set)

    thread = threading.Thread(target=watching, daemon=True)
    thread.start()
    started.wait(600)
    table = sql.Identifier(TABLE)
    texts = list(_texts(rng, 20))
    insert = sql.SQL("INSERT INTO {} (body) VALUES (%s) RETURNING id::text").format(table)
    found = sql.SQL("SELECT 1 FROM {} WHERE key = %s").format(names.table(name))
    lag: list[float] = []
    if per_second is not None:
        lag, reached = _paced_lag(dsn, name, [rng.choice(texts) for _ in range(lags)], per_second)
        if rates is not None:
            rates.append(reached)
    for _ in range(0 if per_second is not None else lags):
        row = conn.execute(insert, (rng.choice(texts),)).fetchone()
        key = str(row[0]) if row else ""
        committed = time.perf_counter()
        while conn.execute(found, (key,), prepare=True).fetchone() is None:
            time.sleep(0.002)
        lag.append(time.perf_counter() - committed)
    time.sleep(SETTLE_S)
    before = _reads(conn)
    time.sleep(IDLE_S)
    idle_reads = _reads(conn) - before
    stop.set()
    conn.execute(sql.SQL("INSERT INTO {} (body) VALUES ('wake the watcher to stop it')").format(table))
    thread.join(60)
    return lag, idle_reads


def _paced_lag(dsn: str, name: str, texts: list[str], per_second: float) -> tuple[list[float], float]:
    """The application commits one single-row INSERT per text, `per_second` of them a second, from
    WRITERS connections of its own (as an application's pool: one connection alone commits no
    faster than its round trips allow), while a reader looks for the rows not found yet every
    2 ms: seconds from each commit to its row being found, and the rate of commits reached."""
    table = sql.Identifier(TABLE)
    insert = sql.SQL("INSERT INTO {} (body) VALUES (%s) RETURNING id::text").format(table)
    found = sql.SQL("SELECT key FROM {} WHERE key = ANY(%s)").format(names.table(name))
    committed: dict[str, float] = {}
    lag: list[float] = []
    lock = threading.Lock()
    done = threading.Event()
    began = time.perf_counter() + 0.5  # (once every writer is connected)

    def writer(first: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as writing:
            for number in range(first, len(texts), WRITERS):
                pause = began + number / per_second - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                row = writing.execute(insert, (texts[number],), prepare=True).fetchone()
                with lock:
                    committed[str(row[0]) if row else ""] = time.perf_counter()

    def reader() -> None:
        with psycopg.connect(dsn, autocommit=True) as looking:
            while not (done.is_set() and not committed):
                with lock:
                    waiting = list(committed)
                if waiting:
                    seen = [str(key) for (key,) in looking.execute(found, (waiting,), prepare=True)]
                    now = time.perf_counter()
                    with lock:
                        lag.extend(now - committed.pop(key) for key in seen)
                time.sleep(0.002)

    looking = threading.Thread(target=reader, daemon=True)
    looking.start()
    writers = [threading.Thread(target=writer, args=(first,), daemon=True) for first in range(WRITERS)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    reached = len(texts) / (time.perf_counter() - began)
    done.set()
    looking.join(600)
    return lag, reached


def _reads(conn: Connection) -> int:
    """Scans of the table so far (sequential and by index), as PostgreSQL counts them."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = %s",
        (TABLE,),
    ).fetchone()
    return int(row[0]) if row else 0
