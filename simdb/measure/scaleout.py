"""`simdb bench --distributed`: the same random fingerprints in an index on the coordinator alone
and in one distributed by key over the Citus workers, measured side by side in one run: bytes,
load, query latency, throughput with concurrent clients, and all pairs.

On a distributed index a probe runs on every shard (rows are split by key, and a near-duplicate
can be under any key), so its latency is the slowest shard's plus Citus' fan-out; the gain is in
throughput and size per server once the workers are separate machines.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import psycopg
from psycopg import sql

from simdb import batch, index, ingest
from simdb.bits import to_signed
from simdb.connection import Connection
from simdb.measure.bench import _planted, best_rounds, machine, percentile
from simdb.modes import SimhashIndex, SimhashSpec
from simdb.placement import LOCAL, Distributed
from simdb.simhash import DEFAULT_FEATURES

CLIENTS = (1, 4, 16)


@dataclass
class PlacementFigures:
    """One index's figures in a `bench --distributed` run."""

    placement: str
    shards_per_query: int
    bytes_per_row: float
    load_s: float
    p50_ms: float
    p99_ms: float
    queries_per_s: dict[int, float]  # clients -> queries a second, all clients together
    pairs: int
    pairs_s: float


@dataclass
class ScaleOut:
    rows: int
    max_distance: int
    queries: int
    workers: int
    server: str
    seconds_per_load_level: float
    local: PlacementFigures
    distributed: PlacementFigures

    def as_dict(self) -> dict[str, object]:
        return {"machine": machine(), **asdict(self)}

    def lines(self) -> list[str]:
        m = machine()
        lines = [
            f"machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}; {self.server}, "
            f"Citus coordinator with {self.workers} workers (all on this machine)",
            f"{self.rows} random 64-bit fingerprints, k = {self.max_distance}, {self.queries} queries "
            "through each index's near function (best of 3 interleaved rounds); throughput over "
            f"{self.seconds_per_load_level:g} s per level, one connection per client",
            f"{'placement':<26} {'shards/query':>12} {'bytes/row':>9} {'load s':>7} {'p50 ms':>7} "
            f"{'p99 ms':>7} " + " ".join(f"{f'q/s@{c}':>8}" for c in CLIENTS) + f" {'pairs s':>8}",
        ]
        for f in (self.local, self.distributed):
            lines.append(
                f"{f.placement:<26} {f.shards_per_query:>12} {f.bytes_per_row:>9.0f} {f.load_s:>7.1f} "
                f"{f.p50_ms:>7.3f} {f.p99_ms:>7.3f} "
                + " ".join(f"{f.queries_per_s[c]:>8.0f}" for c in CLIENTS)
                + f" {f.pairs_s:>8.2f}"
            )
        d, s = self.distributed, self.local
        lines.append(
            f"distributed / single server: p50 x{d.p50_ms / s.p50_ms:.2f}, "
            + ", ".join(f"throughput@{c} x{d.queries_per_s[c] / s.queries_per_s[c]:.2f}" for c in CLIENTS)
            + f", pairs x{d.pairs_s / s.pairs_s:.2f}; the same pairs: {'yes' if d.pairs == s.pairs else 'NO'}"
        )
        return lines


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
    """Load the same rows into a local and a distributed scratch index on the Citus coordinator
    at `dsn`, and measure both."""
    data, probes, _ = _planted(rows, queries, max_distance, seed=1)
    workers = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    version = conn.execute("SHOW server_version").fetchone()
    made: dict[str, SimhashIndex] = {}
    loads: dict[str, float] = {}
    try:
        for label, placed in (("local", LOCAL), ("distributed", Distributed(shards))):
            name = f"bench_{label}_{os.getpid()}"
            spec = SimhashSpec(max_distance).build(name, DEFAULT_FEATURES, rows)
            progress(f"loading {rows} rows into the {label} scratch index")
            began = time.perf_counter()
            saved = index.save(conn, dataclasses.replace(spec, placement=placed))
            ingest.bulk_load(conn, saved, data.items())
            ingest.vacuum(conn, saved)
            loads[label] = time.perf_counter() - began
            made[label] = index.get(conn, name)  # type: ignore[assignment]
        arguments = [(to_signed(v), max_distance) for v in probes]
        statement = {
            label: sql.SQL("SELECT key FROM {}(%s, %s)").format(m.near_function) for label, m in made.items()
        }
        progress(f"timing {len(probes)} queries on each, 3 interleaved rounds")
        best = best_rounds(conn, {label: (statement[label], arguments) for label in made}, rounds=3)
        figures = {}
        for label, m in made.items():
            throughput = {}
            for clients in CLIENTS:
                progress(f"{label}: {clients} concurrent clients for {seconds:g} s")
                throughput[clients] = _throughput(dsn, statement[label], arguments, clients, seconds)
            progress(f"{label}: all pairs")
            began = time.perf_counter()
            pairs = sum(1 for _ in batch.pairs(conn, m, max_distance))
            pairs_s = time.perf_counter() - began
            times = best[label][0]
            figures[label] = PlacementFigures(
                placement="single server" if m.placement == LOCAL else m.placement.describe(),
                shards_per_query=_shards(conn, m),
                bytes_per_row=_bytes(conn, m) / rows,
                load_s=loads[label],
                p50_ms=statistics.median(times),
                p99_ms=percentile(times, 0.99),
                queries_per_s=throughput,
                pairs=pairs,
                pairs_s=pairs_s,
            )
    finally:
        for m in made.values():
            index.drop(conn, m.name)
    return ScaleOut(
        rows=rows,
        max_distance=max_distance,
        queries=len(probes),
        workers=int(workers[0]) if workers else 0,
        server=f"PostgreSQL {version[0] if version else '?'}",
        seconds_per_load_level=seconds,
        local=figures["local"],
        distributed=figures["distributed"],
    )


def _shards(conn: Connection, made: SimhashIndex) -> int:
    """Shards a probe runs on: every shard of a table split by key, 1 on a single server."""
    if made.placement == LOCAL:
        return 1
    row = conn.execute(
        "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = %s::regclass", (made.table.as_string(conn),)
    ).fetchone()
    return int(row[0]) if row else 0


def _bytes(conn: Connection, made: SimhashIndex) -> int:
    """Bytes of the table and its B-trees, over all shards on a distributed index."""
    size = "pg_total_relation_size" if made.placement == LOCAL else "citus_total_relation_size"
    row = conn.execute(
        sql.SQL("SELECT {}(%s::regclass)").format(sql.Identifier(size)), (made.table.as_string(conn),)
    ).fetchone()
    return int(row[0]) if row else 0


def _throughput(
    dsn: str, statement: sql.Composed, arguments: Sequence[tuple[object, ...]], clients: int, seconds: float
) -> float:
    """Queries a second over `clients` connections, each running the probes in turn for `seconds`."""
    counts = [0] * clients
    start = threading.Barrier(clients + 1)
    deadline = [math.inf]  # set once every client is connected and warm

    def client(number: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as own:
            for args in arguments[:20]:
                own.execute(statement, args, prepare=True).fetchall()
            start.wait()
            done, position = 0, number * 37
            while time.perf_counter() < deadline[0]:
                own.execute(statement, arguments[position % len(arguments)], prepare=True).fetchall()
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
