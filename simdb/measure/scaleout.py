"""`simdb bench --distributed`: the same random fingerprints in three layouts on one Citus cluster,
measured side by side in one run: bytes, load, query latency, throughput with concurrent
clients, and all pairs.

- single server: a simdb index on the coordinator alone;
- by key: a simdb index distributed by key (what `simdb create --distributed` makes). A
  near-duplicate can be under any key, so a probe runs on every shard;
- by prefix: Manku et al.'s own layout, built here by hand for the comparison: one table per
  permuted table (prefix, fingerprint, key), each distributed by its prefix and all co-located,
  so that a probe of table i reaches one shard and each table's self-join stays on its shards.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import psycopg
from psycopg import sql

from simdb import batch, index, ingest, names, pairing
from simdb.bits import to_signed
from simdb.connection import Connection
from simdb.measure.bench import machine, percentile, planted_rows
from simdb.modes import SimhashIndex, SimhashSpec
from simdb.placement import LOCAL, Distributed, check_citus, default_shards
from simdb.simhash import DEFAULT_FEATURES

CLIENTS = (1, 4, 16)
ROUNDS = 3

Probe = Callable[[Connection, int], set[str]]  # the keys near probe number i


@dataclass
class LayoutFigures:
    """One layout's figures in a `bench --distributed` run."""

    layout: str
    shards_per_query: int
    bytes_per_row: float
    load_s: float
    p50_ms: float
    p99_ms: float
    queries_per_s: dict[int, float]  # clients -> queries a second, all clients together
    pairs: int
    pairs_s: float
    same_answers: bool  # every probe, and all pairs, found what the single-server index found


@dataclass
class ScaleOut:
    rows: int
    max_distance: int
    tables: int
    queries: int
    workers: int
    server: str
    seconds_per_load_level: float
    layouts: list[LayoutFigures]

    def as_dict(self) -> dict[str, object]:
        return {"machine": machine(), **asdict(self)}

    def lines(self) -> list[str]:
        m = machine()
        lines = [
            f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; {self.server}, "
            f"Citus coordinator with {self.workers} workers (all on this machine)",
            f"{self.rows} random 64-bit fingerprints, k = {self.max_distance}, "
            f"{self.tables} permuted tables, "
            f"{self.queries} queries (best p50 of {ROUNDS} interleaved rounds); throughput over "
            f"{self.seconds_per_load_level:g} s per level, one connection per client",
            f"{'layout':<30} {'shards/query':>12} {'bytes/row':>9} {'load s':>7} {'p50 ms':>7} "
            f"{'p99 ms':>7} " + " ".join(f"{f'q/s@{c}':>8}" for c in CLIENTS) + f" {'pairs s':>8} same",
        ]
        for f in self.layouts:
            lines.append(
                f"{f.layout:<30} {f.shards_per_query:>12} {f.bytes_per_row:>9.0f} {f.load_s:>7.1f} "
                f"{f.p50_ms:>7.3f} {f.p99_ms:>7.3f} "
                + " ".join(f"{f.queries_per_s[c]:>8.0f}" for c in CLIENTS)
                + f" {f.pairs_s:>8.2f} {'yes' if f.same_answers else 'NO'}"
            )
        base = self.layouts[0]
        for f in self.layouts[1:]:
            lines.append(
                f"{f.layout} / {base.layout}: p50 x{f.p50_ms / base.p50_ms:.2f}, "
                + ", ".join(
                    f"throughput@{c} x{f.queries_per_s[c] / base.queries_per_s[c]:.2f}" for c in CLIENTS
                )
                + f", bytes x{f.bytes_per_row / base.bytes_per_row:.2f}"
                + f", pairs x{f.pairs_s / base.pairs_s:.2f}"
            )
        return lines


@dataclass
class _Layout:
    label: str
    shards_per_query: int
    bytes: int
    load_s: float
    probe: Probe
    pairs: Callable[[Connection], int]


def bench_placements(
    conn: Connection,
    dsn: str,
    *,
    rows: int,
    max_distance: int,
    queries: int = 1000,
    shards: int | None = None,
    seconds: float = 5.0,
    progress: Callable[[str], None] = lambda _: None,
) -> ScaleOut:
    """Load the same rows into the three layouts on the Citus coordinator at `dsn` and measure
    them; the scratch tables are dropped afterwards."""
    check_citus(conn)
    data, probes, _ = planted_rows(rows, queries, max_distance, seed=1)
    workers = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    version = conn.execute("SHOW server_version").fetchone()
    made: list[SimhashIndex] = []
    by_prefix: list[sql.Identifier] = []
    try:
        layouts = []
        for label, placed in (("single server", LOCAL), ("by key", Distributed(shards))):
            name = f"bench_{label.replace(' ', '_')}_{os.getpid()}"
            progress(f"loading {rows} rows into a simdb index, {label}")
            began = time.perf_counter()
            spec = SimhashSpec(max_distance).build(name, DEFAULT_FEATURES, rows)
            made.append(index.save(conn, dataclasses.replace(spec, placement=placed)))
            ingest.bulk_load(conn, made[-1], data.items())  # vacuumed and analysed, too
            load_s = time.perf_counter() - began
            layouts.append(_simdb_layout(conn, made[-1], label, load_s, probes, max_distance))
        progress(f"copying the rows into {len(made[0].plan.tables)} tables distributed by prefix")
        layouts.append(_prefix_layout(conn, made[0], shards, by_prefix, probes, max_distance))
        figures = _measure(conn, dsn, layouts, rows, len(probes), seconds, progress)
    finally:
        for table in by_prefix:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
        for m in made:
            index.drop(conn, m.name)
    return ScaleOut(
        rows=rows,
        max_distance=max_distance,
        tables=len(made[0].plan.tables),
        queries=len(probes),
        workers=int(workers[0]) if workers else 0,
        server=f"PostgreSQL {version[0] if version else '?'}",
        seconds_per_load_level=seconds,
        layouts=figures,
    )


def _simdb_layout(
    conn: Connection, made: SimhashIndex, label: str, load_s: float, probes: list[int], k: int
) -> _Layout:
    """A simdb index, probed through its near function."""
    statement = sql.SQL("SELECT key FROM {}(%s, %s)").format(made.near_function)
    arguments = [(to_signed(v), k) for v in probes]

    def probe(own: Connection, number: int) -> set[str]:
        return {str(r[0]) for r in own.execute(statement, arguments[number], prepare=True)}

    def pairs(own: Connection) -> int:
        return sum(1 for _ in batch.pairs(own, made, k))

    distributed = made.placement != LOCAL
    size = "citus_total_relation_size" if distributed else "pg_total_relation_size"
    found = conn.execute(
        sql.SQL("SELECT {}(%s::regclass)").format(sql.Identifier(size)), (made.table.as_string(conn),)
    ).fetchone()
    shards = conn.execute(
        "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = to_regclass(%s)",
        (made.table.as_string(conn),),
    ).fetchone()
    return _Layout(
        f"simdb, {label}" + (f", {shards[0]} shards" if distributed and shards else ""),
        int(shards[0]) if distributed and shards else 1,
        int(found[0]) if found else 0,
        load_s,
        probe,
        pairs,
    )


def _prefix_layout(
    conn: Connection,
    local: SimhashIndex,
    shards: int | None,
    tables: list[sql.Identifier],
    probes: list[int],
    k: int,
) -> _Layout:
    """Manku's layout by hand: table i holds (prefix_i, fingerprint, key), distributed by prefix_i
    (the first with `shards` shards, the rest co-located with it), a B-tree on prefix."""
    began = time.perf_counter()
    shards = shards or default_shards(conn)
    stored = sql.SQL("r.fingerprint")
    for number, prefix in enumerate(local.btree_keys(stored)):
        name = names.in_schema(f"{local.name}_by_prefix_{number}")
        tables.append(name)
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (prefix bigint NOT NULL, fingerprint bigint NOT NULL, key text NOT NULL)"
            ).format(name)
        )
        colocation = (
            sql.SQL("colocate_with => {}").format(sql.Literal(tables[0].as_string(conn)))
            if number
            else sql.SQL("shard_count => {}").format(sql.Literal(shards))
        )
        conn.execute(
            sql.SQL("SELECT create_distributed_table({}, 'prefix', {})").format(
                sql.Literal(name.as_string(conn)), colocation
            )
        )
        conn.execute(
            sql.SQL("INSERT INTO {} SELECT {}, r.fingerprint, r.key FROM {} AS r").format(
                name, prefix, local.table
            )
        )
        conn.execute(sql.SQL("CREATE INDEX ON {} (prefix)").format(name))
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(name))
    load_s = time.perf_counter() - began
    values = np.array(probes, dtype=np.uint64)
    prefixes = [pairing.prefixes(values, table).astype(np.int64).tolist() for table in local.plan.tables]
    distance = local.width.distance(sql.SQL("fingerprint"), sql.SQL("%s"))
    statements = [
        sql.SQL("SELECT key FROM {} WHERE prefix = %s AND {} <= %s").format(name, distance) for name in tables
    ]

    def probe(own: Connection, number: int) -> set[str]:
        signed = to_signed(probes[number])
        with own.pipeline():  # one round trip: each table's probe goes to its one shard
            cursors = [
                own.execute(statement, (prefixes[i][number], signed, k), prepare=True)
                for i, statement in enumerate(statements)
            ]
        return {str(r[0]) for cursor in cursors for r in cursor.fetchall()}

    pair_statements = [
        sql.SQL(
            "SELECT a.key, b.key FROM {t} AS a JOIN {t} AS b ON a.prefix = b.prefix"
            " WHERE a.key < b.key AND {d} <= %s"
        ).format(t=name, d=local.width.distance(sql.SQL("a.fingerprint"), sql.SQL("b.fingerprint")))
        for name in tables
    ]

    def pairs(own: Connection) -> int:
        found: set[tuple[str, str]] = set()
        for statement in pair_statements:  # each a co-located self-join, run on the shards
            found.update((str(a), str(b)) for a, b in own.execute(statement, (k,)))
        return len(found)

    size = conn.execute(
        sql.SQL("SELECT {}").format(
            sql.SQL(" + ").join(
                sql.SQL("citus_total_relation_size({})").format(sql.Literal(t.as_string(conn)))
                for t in tables
            )
        )
    ).fetchone()
    return _Layout(
        f"by prefix (by hand), {shards} shards",
        len(tables),
        int(size[0]) if size else 0,
        load_s,
        probe,
        pairs,
    )


def _measure(
    conn: Connection,
    dsn: str,
    layouts: list[_Layout],
    rows: int,
    queries: int,
    seconds: float,
    say: Callable[[str], None],
) -> list[LayoutFigures]:
    say(f"timing {queries} queries on each layout, {ROUNDS} interleaved rounds")
    best: dict[str, list[float]] = {}
    answers: dict[str, list[set[str]]] = {}
    for _ in range(ROUNDS):
        for layout in layouts:
            for number in range(min(20, queries)):  # warm: plans, caches, connections
                layout.probe(conn, number)
            times, found = [], []
            for number in range(queries):
                began = time.perf_counter()
                found.append(layout.probe(conn, number))
                times.append((time.perf_counter() - began) * 1000)
            if layout.label not in best or statistics.median(times) < statistics.median(best[layout.label]):
                best[layout.label], answers[layout.label] = times, found
    figures: list[LayoutFigures] = []
    for layout in layouts:
        throughput = {}
        for clients in CLIENTS:
            say(f"{layout.label}: {clients} concurrent clients for {seconds:g} s")
            throughput[clients] = _throughput(dsn, layout.probe, queries, clients, seconds)
        say(f"{layout.label}: all pairs")
        began = time.perf_counter()
        pairs = layout.pairs(conn)
        pairs_s = time.perf_counter() - began
        times = best[layout.label]
        figures.append(
            LayoutFigures(
                layout=layout.label,
                shards_per_query=layout.shards_per_query,
                bytes_per_row=layout.bytes / rows,
                load_s=layout.load_s,
                p50_ms=statistics.median(times),
                p99_ms=percentile(times, 0.99),
                queries_per_s=throughput,
                pairs=pairs,
                pairs_s=pairs_s,
                same_answers=answers[layout.label] == answers[layouts[0].label]
                and pairs == (figures[0].pairs if figures else pairs),
            )
        )
    return figures


def _throughput(dsn: str, probe: Probe, queries: int, clients: int, seconds: float) -> float:
    """Queries a second over `clients` connections, each running the probes in turn for `seconds`."""
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    deadline = [math.inf]  # set once every client is connected and warm

    def client(number: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as own:
            for position in range(min(20, queries)):
                probe(own, position)
            start.wait()
            done, position = 0, number * 37
            while time.perf_counter() < deadline[0]:
                probe(own, position % queries)
                done += 1
                position += 1
            counts[number] = done

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    deadline[0] = began + seconds
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - began)
