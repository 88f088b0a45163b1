"""`simdb bench --distributed`: the same random fingerprints in three placements on one Citus
cluster, measured side by side in one run: bytes, load, query latency, throughput with concurrent
clients, all pairs (with the client's peak memory), and what `simdb plan`'s model predicted.

- single server: a simdb index on the coordinator alone (the baseline);
- by key: a simdb index distributed by key (`simdb create --distributed`). A near-duplicate can
  be under any key, so a probe runs on every shard;
- by prefix: Manku et al.'s layout (`--layout prefix`): each row once per permuted table in a
  probe table distributed by prefix, so that a probe of table i reaches one shard and all pairs
  are co-located self-joins on the shards.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import psycopg
from psycopg import sql

from simdb import duplicates, ingest
from simdb.db.connection import Connection
from simdb.index import lifecycle as indexes
from simdb.index import names
from simdb.index.modes import SimhashIndex, SimhashSpec
from simdb.index.placement import LOCAL, ByPrefix, Distributed, Placement, check_citus
from simdb.measure.bench import keyed, machine, percentile, planted_rows
from simdb.plan.citus_cost import LayoutCost, plan
from simdb.sketch.bits import to_signed
from simdb.sketch.features import DEFAULT_FEATURES

CLIENTS = (1, 4, 16)
ROUNDS = 3

Probe = Callable[[Connection, int], set[str]]  # the keys near probe number i


@dataclass
class LayoutFigures:
    """One layout's figures in a `bench --distributed` run, with the model's predictions."""

    layout: str
    shards_per_query: int  # the most tasks Citus planned for one of 50 probes (EXPLAIN)
    bytes_per_row: float
    load_s: float
    p50_ms: float
    p99_ms: float
    queries_per_s: dict[int, float]  # clients -> queries a second, all clients together
    pairs: int
    pairs_s: float
    client_peak_mb: float  # `simdb pairs`' peak resident memory (a process of its own)
    same_answers: bool  # every probe, and all pairs, found what the single-server index found
    predicted: dict[str, float] | None = None  # simdb plan's p50_ms, pairs_s, bytes_per_row


@dataclass
class ScaleOut:
    rows: int
    max_distance: int
    tables: int
    shards: int
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
            f"{self.tables} permuted tables, {self.shards} shards, "
            f"{self.queries} queries (best p50 of {ROUNDS} interleaved rounds); throughput over "
            f"{self.seconds_per_load_level:g} s per level, one connection per client",
            f"{'layout':<26} {'shards/query':>12} {'bytes/row':>9} {'load s':>7} {'p50 ms':>7} "
            f"{'p99 ms':>7} "
            + " ".join(f"{f'q/s@{c}':>8}" for c in CLIENTS)
            + f" {'pairs s':>8} {'client MB':>9} same",
        ]
        for f in self.layouts:
            lines.append(
                f"{f.layout:<26} {f.shards_per_query:>12} {f.bytes_per_row:>9.0f} {f.load_s:>7.1f} "
                f"{f.p50_ms:>7.3f} {f.p99_ms:>7.3f} "
                + " ".join(f"{f.queries_per_s[c]:>8.0f}" for c in CLIENTS)
                + f" {f.pairs_s:>8.2f} {f.client_peak_mb:>9.0f} {'yes' if f.same_answers else 'NO'}"
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
        for f in self.layouts:
            if f.predicted:
                p = f.predicted
                lines.append(
                    f"{f.layout}, simdb plan's model: p50 {p['p50_ms']:.3f} ms (measured x"
                    f"{f.p50_ms / p['p50_ms']:.2f}), all pairs {p['pairs_s']:.2f} s (x"
                    f"{f.pairs_s / p['pairs_s']:.2f}), bytes/row {p['bytes_per_row']:.0f} (x"
                    f"{f.bytes_per_row / p['bytes_per_row']:.2f})"
                )
        return lines


@dataclass
class _Layout:
    label: str
    index: SimhashIndex
    shards_per_query: int
    bytes: int
    load_s: float
    probe: Probe
    predicted: LayoutCost | None


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
    """Load the same rows into the three placements on the Citus coordinator at `dsn` and measure
    them; the indexes are dropped afterwards."""
    check_citus(conn)
    values, probes, _ = planted_rows(rows, queries, max_distance, seed=1)
    data = keyed(values)
    found = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    workers = int(found[0]) if found else 0
    version = conn.execute("SHOW server_version").fetchone()
    shards = shards or 2 * max(1, workers)
    model = plan(rows, max(1, workers), max_distance, shards)
    placements: list[tuple[str, Placement, LayoutCost | None]] = [
        ("single server", LOCAL, None),
        (f"by key, {shards} shards", Distributed(shards), model.by_key),
        (f"by prefix, {shards} shards", ByPrefix(shards), model.by_prefix),
    ]
    index: list[SimhashIndex] = []
    try:
        layouts = []
        for label, placed, predicted in placements:
            name = f"bench_{label.replace(' ', '_')}_{os.getpid()}"
            progress(f"loading {rows} rows into a simdb index, {label}")
            began = time.perf_counter()
            spec = SimhashSpec(max_distance).build(name, DEFAULT_FEATURES, rows)
            index.append(indexes.save(conn, dataclasses.replace(spec, placement=placed)))
            ingest.bulk_load(conn, index[-1], data.items())  # vacuumed and analysed, too
            if placed.layout == ByPrefix.layout:
                conn.execute(sql.SQL("VACUUM ANALYZE {}").format(names.probes_table(name)))
            load_s = time.perf_counter() - began
            layouts.append(_layout(conn, index[-1], label, load_s, probes, max_distance, predicted))
        figures = _measure(conn, dsn, layouts, rows, len(probes), seconds, progress)
    finally:
        for m in index:
            indexes.drop(conn, m.name)
    return ScaleOut(
        rows=rows,
        max_distance=max_distance,
        tables=len(index[0].plan.tables),
        shards=shards,
        queries=len(probes),
        workers=workers,
        server=f"PostgreSQL {version[0] if version else '?'}",
        seconds_per_load_level=seconds,
        layouts=figures,
    )


def _layout(
    conn: Connection,
    index: SimhashIndex,
    label: str,
    load_s: float,
    probes: list[int],
    k: int,
    predicted: LayoutCost | None,
) -> _Layout:
    """A simdb index, probed through its near function; its bytes (with the probe table's)."""
    statement = sql.SQL("SELECT key FROM {}(%s, %s)").format(index.near_function)
    arguments = [(to_signed(v), k) for v in probes]

    def probe(own: Connection, number: int) -> set[str]:
        return {str(r[0]) for r in own.execute(statement, arguments[number], prepare=True)}

    distributed = index.placement.distributed
    size = sql.Identifier("citus_total_relation_size" if distributed else "pg_total_relation_size")
    tables = [names.qualified(index.name)]
    if index.placement.layout == ByPrefix.layout and distributed:
        tables.append(names.probes_table_name(index.name))
    total = conn.execute(
        sql.SQL("SELECT {}").format(
            sql.SQL(" + ").join(sql.SQL("{}({}::regclass)").format(size, sql.Literal(t)) for t in tables)
        )
    ).fetchone()
    touched = max(probe_tasks(conn, index, value) for value in probes[:50])
    return _Layout(
        label,
        index,
        touched,
        int(total[0]) if total else 0,
        load_s,
        probe,
        predicted,
    )


def probe_tasks(conn: Connection, index: SimhashIndex, fingerprint: int) -> int:
    """The shards a probe of `fingerprint` runs on, as Citus plans it: the Task Count of its
    EXPLAIN (1 for an index on one server)."""
    statement = index.near_statement(
        sql.Literal(to_signed(fingerprint)), sql.Literal(index.plan.max_distance)
    )
    found = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) {}").format(statement)).fetchone()
    return _task_count(found[0] if found else [])


def _task_count(plan: object) -> int:
    """The largest "Task Count" anywhere in an EXPLAIN's JSON (1 without any)."""
    if isinstance(plan, dict):
        own = int(plan.get("Task Count", 1))
        return max([own, *(_task_count(value) for value in plan.values())])
    if isinstance(plan, list):
        return max([1, *(_task_count(value) for value in plan)])
    return 1


def _pairs_in_a_process(dsn: str, index: SimhashIndex) -> tuple[int, str, float, float]:
    """`simdb pairs NAME` as a user runs it, in a process of its own: (pairs, a digest of its
    sorted output, seconds, the process's peak resident memory in MB)."""
    with tempfile.TemporaryFile() as out:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", _PEAK_AT_EXIT, "pairs", index.name, "--dsn", dsn],
            stdout=out,
            stderr=subprocess.PIPE,
            check=False,
        )
        seconds = time.perf_counter() - began
        errors = done.stderr.decode()
        if done.returncode != 0:
            raise RuntimeError(f"simdb pairs {index.name} failed: {errors.strip()}")
        out.seek(0)
        lines = out.read().splitlines()[1:]  # (the CSV header)
    digest = hashlib.sha256(b"\n".join(sorted(lines))).hexdigest()
    peaks = [line.split()[1] for line in errors.splitlines() if line.startswith(_PEAK)]
    return len(lines), digest, seconds, int(peaks[-1]) / 1024 if peaks else math.nan


# `simdb pairs` run as the command line runs it, telling its own peak resident memory at exit:
# VmHWM, the high-water mark of the process's memory since it began this program (ru_maxrss
# would count the benchmark's own memory, which a child inherits at fork).
_PEAK = "simdb-bench-peak-kB"
_PEAK_AT_EXIT = (
    "import atexit, sys\n"
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    f"            sys.stderr.write('{_PEAK} ' + line.split()[1] + '\\n')\n"
    "atexit.register(peak)\n"
    "from simdb.cli import run\n"
    "run()\n"
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
    digests: list[str] = []
    for layout in layouts:
        throughput = {}
        for clients in CLIENTS:
            say(f"{layout.label}: {clients} concurrent clients for {seconds:g} s")
            throughput[clients] = _throughput(dsn, layout.probe, queries, clients, seconds)
        say(f"{layout.label}: all pairs, here and in a process of its own (`simdb pairs`)")
        began = time.perf_counter()
        pairs = sum(1 for _ in duplicates.pairs(conn, layout.index))
        pairs_s = time.perf_counter() - began
        counted, digest, _, peak_mb = _pairs_in_a_process(dsn, layout.index)
        digests.append(digest if counted == pairs else "")
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
                client_peak_mb=peak_mb,
                same_answers=answers[layout.label] == answers[layouts[0].label] and digest == digests[0],
                predicted=None
                if layout.predicted is None
                else {
                    "p50_ms": layout.predicted.p50_ms,
                    "pairs_s": layout.predicted.pairs_s,
                    "bytes_per_row": layout.predicted.bytes_per_row,
                },
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
