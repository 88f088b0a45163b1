"""Benchmarks that print figures with their machine, sizes and a same-process comparison.

Nothing here asserts a timing; `simdb bench` reports what it measured.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import psycopg
import xxhash
from psycopg import sql

from simdb import duplicates, ingest, load
from simdb.db.connection import Connection
from simdb.index import catalog, names
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index, JaccardSpec, SimhashIndex, SimhashSpec
from simdb.measure.baseline import hand_table
from simdb.plan import planner
from simdb.sketch.bits import to_signed
from simdb.sketch.features import DEFAULT_FEATURES, EmptyDocument, Features
from simdb.sketch.minhash import document_signature
from simdb.sketch.simhash import fingerprint, fingerprints
from simdb.sources import readers
from simdb.sources.fingerprints import FingerprintFile


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            models = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
            cpu = models[0] if models else cpu
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
    }


@dataclass
class NewPairsBench:
    """`pairs --new` after rows are added to the scratch index, beside a full run of the same rows."""

    rows: int  # rows added (1% of the index: a planted near copy and a random row, by turns)
    pairs: int  # the pairs --new found
    seconds: float
    full_pairs: int
    full_seconds: float
    exact: bool  # the new pairs are exactly the full run's pairs that involve an added row


def bench_new_pairs(
    conn: Connection, index: SimhashIndex, values: np.ndarray, max_distance: int, seed: int
) -> NewPairsBench:
    """Track changes (a first pairs --new: every pair), add 1% rows, then time pairs --new and a
    full run in turn, and check one against the other."""
    jobs = os.cpu_count() or 1  # (as simdb pairs: every core)
    list(duplicates.pairs(conn, index, new_for="bench", jobs=jobs))
    rng = np.random.default_rng(seed + 1)
    count = max(2, len(values) // 100)
    added = {}
    for number in range(count):
        if number % 2:
            added[f"added{number}"] = int(rng.integers(0, 2**64, dtype=np.uint64))
        else:
            flips = rng.choice(64, size=int(rng.integers(0, max_distance + 1)), replace=False)
            near = int(values[int(rng.integers(len(values)))]) ^ sum(1 << int(bit) for bit in flips)
            added[f"added{number}"] = near
    ingest.store(conn, index, added)
    began = time.perf_counter()
    new = {(pair.key_a, pair.key_b) for pair in duplicates.pairs(conn, index, new_for="bench", jobs=jobs)}
    new_s = time.perf_counter() - began
    began = time.perf_counter()
    full = {(pair.key_a, pair.key_b) for pair in duplicates.pairs(conn, index, jobs=jobs)}
    full_s = time.perf_counter() - began
    expected = {pair for pair in full if pair[0] in added or pair[1] in added}
    return NewPairsBench(count, len(new), new_s, len(full), full_s, new == expected)


@dataclass
class IndexBench:
    """Figures of one `simdb bench` run on a scratch index."""

    rows: int
    max_distance: int
    blocks: int
    tables: int
    queries: int
    covering: bool  # the B-trees carry the fingerprint (Index.covering): candidates verified in them
    server: str
    load_rows_per_s: float
    bytes_per_row: float
    query_p50_ms: float
    query_p99_ms: float
    server_p50_ms: float
    direct_p50_ms: float
    roundtrip_p50_ms: float
    hand_p50_ms: float
    hand_p99_ms: float
    hand_bytes_per_row: float
    hand_load_s: float
    hand_recall: float
    rounds: int
    recall: float
    brute_force_p50_ms: float
    brute_force_queries: int
    brute_force_recall: float
    pairs: int
    pairs_seconds: float
    pairs_recall: float
    sql_pairs_seconds: float
    sql_pairs: int | None  # None: stopped at sql_pairs_seconds (--pairs-limit)
    pairs_peak_rss_mb: float  # simdb pairs' peak resident memory (its own process)
    hand_pairs: int | None  # None: stopped at hand_pairs_seconds (its blocks give ever more candidates)
    hand_pairs_seconds: float
    index_build_s: float
    hnsw: dict[str, float] | None
    hnsw_note: str
    added: NewPairsBench | None = None
    first_touch_p50_ms: float = float("nan")  # the queries' first run, before the timed rounds
    first_touch_p99_ms: float = float("nan")
    truth_from: str = "scan"  # recall's truth: a numpy scan of all rows, or the planted neighbours
    predicted: dict[str, float] = field(default_factory=dict)  # simdb plan's figures for this plan
    machine: dict[str, object] = field(default_factory=machine)

    @property
    def speedup(self) -> float:
        return self.brute_force_p50_ms / self.query_p50_ms if self.query_p50_ms else float("nan")

    @property
    def load_s(self) -> float:
        """COPY and the B-tree builds, as the hand-written table's load is counted."""
        return self.rows / self.load_rows_per_s + self.index_build_s

    def against_hand(self) -> dict[str, float]:
        """Ratios to the hand-written table: storage, load, and query time above the round trip."""
        above = max(self.hand_p50_ms - self.roundtrip_p50_ms, 1e-6)  # (never 0: a timer's resolution)
        return {
            "bytes_per_row": self.bytes_per_row / self.hand_bytes_per_row,
            "load": self.load_s / self.hand_load_s,
            "near_above_roundtrip": (self.query_p50_ms - self.roundtrip_p50_ms) / above,
            "direct_above_roundtrip": (self.direct_p50_ms - self.roundtrip_p50_ms) / above,
            "dispatch_ms": self.query_p50_ms - self.direct_p50_ms,
            "pairs": self.pairs_seconds / self.hand_pairs_seconds,
        }

    def as_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "speedup_vs_brute_force": self.speedup,
            "vs_hand_written": self.against_hand(),
        }


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


PAIRS_LIMIT_S = 300.0  # the longest simdb.pairs in SQL and the hand-written self-joins may take
TRUTH_SCAN_LIMIT = 10**10  # row comparisons numpy makes for the recall's truth (10M rows, 1,000 queries)


def _planted_pairs(values: np.ndarray, planted: int, k: int) -> set[tuple[str, str]]:
    """All pairs within k among the planted rows r0..r{planted-1}, by brute force (a small set)."""
    keys = sorted(f"r{i}" for i in range(planted))
    chosen = values[[int(key[1:]) for key in keys]]
    found: set[tuple[str, str]] = set()
    for i in range(len(keys)):
        close = np.nonzero(np.bitwise_count(chosen[i + 1 :] ^ chosen[i]) <= k)[0]
        found.update((keys[i], keys[i + 1 + int(j)]) for j in close)
    return found


def planted_rows(rows: int, queries: int, k: int, seed: int) -> tuple[np.ndarray, list[int], int]:
    """Random fingerprints plus, for each query, neighbours at every distance 0..k+1.

    Returns the rows' fingerprints (row i is keyed r{i}), the query fingerprints, and how many
    rows (r0, r1, ...) are planted.
    """
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64, size=rows, dtype=np.uint64)
    probes = rng.integers(0, 2**64, size=queries, dtype=np.uint64)
    planted = min(rows, queries * (k + 2))
    for slot in range(planted):
        query, distance = divmod(slot, k + 2)
        flips = rng.choice(64, size=distance, replace=False)
        values[slot] = probes[query] ^ np.bitwise_or.reduce(
            np.uint64(1) << flips.astype(np.uint64), initial=0
        )
    return values, [int(p) for p in probes.tolist()], planted


def keyed(values: np.ndarray) -> dict[str, int]:
    """The rows as {key: fingerprint} (for the smaller benchmarks that store them so)."""
    return {f"r{i}": int(v) for i, v in enumerate(values.tolist())}


def bench_index(
    conn: Connection,
    *,
    rows: int,
    max_distance: int,
    queries: int = 1000,
    brute_force_queries: int = 20,
    hnsw: bool = True,
    new_pairs: bool = True,
    seed: int = 1,
    rounds: int = 3,
    pairs_limit_s: float = PAIRS_LIMIT_S,
    progress: Callable[[str], None] = lambda _: None,
) -> IndexBench:
    """Load `rows` random fingerprints into a scratch index and into the hand-written block table,
    time the same queries through both (`rounds` interleaved rounds, the best p50 of each kept),
    and compare with a scan."""
    name = f"bench_{os.getpid()}"
    values, probes, planted = planted_rows(rows, queries, max_distance, seed)
    index = indexes.save(conn, SimhashSpec(max_distance).build(name, DEFAULT_FEATURES, rows))
    try:
        progress(f"loading {rows} rows into scratch index {name} (simdb load of a .npy file)")
        loaded = _load_file(conn, index, values)  # vacuumed and analysed, too
        size = conn.execute("SELECT pg_total_relation_size(%s)", (names.qualified(name),)).fetchone()

        progress(f"loading the same {rows} rows into the hand-written block table")
        with hand_table(conn, values, max_distance) as hand:
            progress(f"timing {queries} queries on first touch (their prefixes not read before)")
            first_touch, _ = timed(
                conn,
                sql.SQL("SELECT key FROM simdb.near(%s, %s, %s)"),
                [(name, to_signed(v), max_distance) for v in probes],
                warm=0,
            )
            progress(f"timing {queries} queries, {rounds} interleaved rounds")
            statement = sql.SQL("SELECT key FROM simdb.near(%s, %s, %s)")
            direct_statement = sql.SQL("SELECT key FROM {}(%s, %s)").format(index.near_function)
            kinds: dict[str, Timed] = {
                "near": (statement, [(name, to_signed(v), max_distance) for v in probes]),
                "direct": (direct_statement, [(to_signed(v), max_distance) for v in probes]),
                "hand": (hand.query(), [hand.arguments(v, max_distance) for v in probes]),
                "roundtrip": (sql.SQL("SELECT %s::bigint"), [(to_signed(v),) for v in probes]),
            }
            best = best_rounds(conn, kinds, rounds)
            # before the pairs, whose scans of every row would leave the probed pages uncached
            server = server_side_ms(conn, index, [(to_signed(v), max_distance) for v in probes[:200]])

            progress(
                "timing all pairs: simdb pairs (a process of its own), simdb.pairs in SQL,"
                " the hand-written table's"
            )
            found_pairs, pairs_s, pairs_rss = _pairs_command(conn, name, max_distance)
            pairs_in_sql = sql.SQL("SELECT * FROM {}(%s)").format(index.pairs_function)
            sql_pairs, sql_pairs_s = _limited(conn, pairs_in_sql, [max_distance], pairs_limit_s)
            hand_limit = min(3 * sql_pairs_s + 5, pairs_limit_s)
            hand_pairs, hand_pairs_s = _limited(
                conn, hand.pairs(), [max_distance] * len(hand.widths), hand_limit
            )
        client, results = best["near"]
        direct, roundtrip, (hand_times, hand_found) = best["direct"][0], best["roundtrip"][0], best["hand"]
        hand_results = [{f"r{i}" for i in found} for found in hand_found]

        progress(f"timing {brute_force_queries} brute-force scans")
        scan = sql.SQL("SELECT key FROM {} WHERE simdb.hamming(fingerprint, %s) <= %s").format(index.table)
        some = probes[:brute_force_queries]
        brute, scanned = timed(conn, scan, [(to_signed(v), max_distance) for v in some], warm=0)
        truth, truth_from = _true_neighbours(values, probes, max_distance, planted, scanned)

        expected_pairs = _planted_pairs(values, planted, max_distance)
        hnsw_figures, hnsw_note = None, "not run (--no-hnsw)"
        if hnsw:
            hnsw_figures = _bench_hnsw(conn, index, probes, truth, progress)
            hnsw_note = "" if hnsw_figures else "the vector extension is not available on this server"
        if new_pairs:
            progress(f"pairs --new: {max(2, rows // 100)} rows added, new pairs against a full run")
        version = conn.execute("SHOW server_version").fetchone()
        return IndexBench(
            rows=rows,
            max_distance=max_distance,
            blocks=index.plan.blocks,
            tables=len(index.plan.tables),
            covering=index.covering,
            queries=len(probes),
            server=f"PostgreSQL {version[0] if version else '?'}",
            load_rows_per_s=rows / loaded.copy_seconds,
            index_build_s=loaded.build_seconds,
            bytes_per_row=(size[0] if size else 0) / rows,
            query_p50_ms=statistics.median(client),
            query_p99_ms=percentile(client, 0.99),
            server_p50_ms=statistics.median(server),
            direct_p50_ms=statistics.median(direct),
            roundtrip_p50_ms=statistics.median(roundtrip),
            hand_p50_ms=statistics.median(hand_times),
            hand_p99_ms=percentile(hand_times, 0.99),
            hand_bytes_per_row=hand.bytes_per_row,
            hand_load_s=hand.load_seconds,
            hand_recall=recall_of(hand_results, truth),
            rounds=rounds,
            recall=recall_of(results, truth),
            brute_force_p50_ms=statistics.median(brute) if brute else float("nan"),
            brute_force_queries=len(brute),
            brute_force_recall=recall_of(scanned, truth[: len(scanned)]),
            pairs=len(found_pairs),
            pairs_seconds=pairs_s,
            pairs_peak_rss_mb=pairs_rss,
            sql_pairs=sql_pairs,
            pairs_recall=len(expected_pairs & found_pairs) / len(expected_pairs) if expected_pairs else 1.0,
            sql_pairs_seconds=sql_pairs_s,
            hand_pairs=hand_pairs,
            hand_pairs_seconds=hand_pairs_s,
            hnsw=hnsw_figures,
            hnsw_note=hnsw_note,
            added=bench_new_pairs(conn, index, values, max_distance, seed) if new_pairs else None,
            first_touch_p50_ms=statistics.median(first_touch),
            first_touch_p99_ms=percentile(first_touch, 0.99),
            truth_from=truth_from,
            predicted=_predicted(index, rows),
        )
    finally:
        indexes.drop(conn, name)


def _limited(
    conn: Connection, statement: sql.Composed, arguments: list[int], limit_s: float
) -> tuple[int | None, float]:
    """(rows, seconds) of a pairs statement, counted in the server, or (None, limit_s) if it
    takes longer: self-joins of short prefixes compare N^2 / 2^(prefix bits) candidates, hours
    at 100M rows."""
    began = time.perf_counter()
    counted = sql.SQL("SELECT count(*) FROM ({}) AS found").format(statement)
    try:
        with conn.transaction():
            conn.execute(sql.SQL("SET LOCAL statement_timeout = {}").format(sql.Literal(int(limit_s * 1000))))
            found = conn.execute(counted, arguments).fetchone()
    except psycopg.errors.QueryCanceled:
        return None, limit_s
    return (int(found[0]) if found else 0), time.perf_counter() - began


def _pairs_command(
    conn: Connection, name: str, max_distance: int
) -> tuple[set[tuple[str, str]], float, float]:
    """`simdb pairs NAME` run as a user runs it, in a process of its own: the pairs it printed,
    its seconds, and its peak resident memory in MB (the high-water mark of its own memory)."""
    with tempfile.TemporaryDirectory(prefix="simdb-bench-") as folder:
        peak_file = os.path.join(folder, "peak")
        command = [sys.executable, "-c", _RUN_AND_TELL_PEAK, peak_file, "pairs", name]
        began = time.perf_counter()
        process = subprocess.Popen(
            [*command, "-k", str(max_distance), "--format", "csv", "--dsn", conn.info.dsn],
            stdout=subprocess.PIPE,
            text=True,
        )
        rows = csv.reader(process.stdout or [])
        next(rows, None)  # the header
        found = {(row[0], row[1]) for row in rows}
        status = process.wait()
        seconds = time.perf_counter() - began
        if status != 0:
            raise RuntimeError(f"simdb pairs {name} failed (status {status}): see its error above")
        with open(peak_file) as peak:
            return found, seconds, int(peak.read()) / 1024


# `simdb ARGS...`, whose peak resident memory (VmHWM, kB) is written to the file named first. The
# kernel's ru_maxrss of a child counts its parent's memory at the fork (this benchmark's rows, 4
# GB at 100M); VmHWM is the high-water mark of the child's own address space.
_RUN_AND_TELL_PEAK = """
import atexit, sys
peak_file = sys.argv.pop(1)
def tell():
    with open("/proc/self/status") as status, open(peak_file, "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(tell)
from simdb.cli import run
run()
"""


def _true_neighbours(
    values: np.ndarray, probes: Sequence[int], k: int, planted: int, scanned: Sequence[set[str]]
) -> tuple[list[set[str]], str]:
    """The exact answer of every probe and where it comes from: numpy over all rows (independent
    of PostgreSQL) up to TRUTH_SCAN_LIMIT row comparisons; beyond, the planted neighbours of each
    probe, joined with what the brute-force scans found for the first probes (a random row within
    k bits of a random probe is a 1-in-10^14 event a row)."""
    if len(values) * len(probes) <= TRUTH_SCAN_LIMIT:
        return [
            {f"r{i}" for i in np.nonzero(np.bitwise_count(values ^ np.uint64(p)) <= k)[0]} for p in probes
        ], "scan"
    truth: list[set[str]] = [set() for _ in probes]
    for slot in range(planted):
        query, distance = divmod(slot, k + 2)
        if distance <= k:
            truth[query].add(f"r{slot}")
    for found, scan in zip(truth, scanned, strict=False):
        found |= scan
    return truth, "planted"


def _load_file(conn: Connection, index: Index, values: np.ndarray) -> load.LoadReport:
    """The rows loaded as a user loads fingerprints computed elsewhere: `simdb load` of a .npy file."""
    with tempfile.TemporaryDirectory(prefix="simdb-bench-") as folder:
        path = os.path.join(folder, "fingerprints.npy")
        np.save(path, values)
        with FingerprintFile(path, "npy", key_prefix="r") as source:
            return load.load(conn, index, source)


def _predicted(index: SimhashIndex, rows: int) -> dict[str, float]:
    """What `simdb plan` predicts of this index's plan at these rows, to print beside the figures."""
    design = planner.price(index.plan, rows, covering=index.covering)
    return {
        "online_ms": design.online_ms,
        "sql_pairs_s": design.batch_s,
        "bytes_per_row": design.bytes_per_row,
        "candidates_per_query": design.candidates_per_query,
    }


def recall_of(found: Sequence[set[str]], truth: Sequence[set[str]]) -> float:
    """Share of the true neighbours found, over all queries (1.0 when there are none)."""
    wanted = sum(len(t) for t in truth)
    return sum(len(f & t) for f, t in zip(found, truth, strict=True)) / wanted if wanted else 1.0


def timed(
    conn: Connection,
    statement: sql.SQL | sql.Composed,
    arguments: Sequence[tuple[object, ...]],
    warm: int = 50,
) -> tuple[list[float], list[set[str]]]:
    """Milliseconds of each prepared execution, client-side, and the first column of each result."""
    for args in arguments[:warm]:
        conn.execute(statement, args, prepare=True).fetchall()
    times, results = [], []
    for args in arguments:
        began = time.perf_counter()
        rows = conn.execute(statement, args, prepare=True).fetchall()
        times.append((time.perf_counter() - began) * 1000)
        results.append({str(row[0]) for row in rows})
    return times, results


Timed = tuple[sql.SQL | sql.Composed, Sequence[tuple[object, ...]]]  # a statement and its arguments


def best_rounds(
    conn: Connection,
    kinds: dict[str, Timed],
    rounds: int,
) -> dict[str, tuple[list[float], list[set[str]]]]:
    """Each kind of query timed once per round, the kinds interleaved, so that a noisy moment of the
    machine hits all of them; per kind, the round with the lowest p50 is kept."""
    best: dict[str, tuple[list[float], list[set[str]]]] = {}
    for _ in range(rounds):
        for kind, (statement, arguments) in kinds.items():
            times, found = timed(conn, statement, arguments)
            if kind not in best or statistics.median(times) < statistics.median(best[kind][0]):
                best[kind] = (times, found)
    return best


def _bench_hnsw(
    conn: Connection,
    index: SimhashIndex,
    probes: Sequence[int],
    truth: Sequence[set[str]],
    progress: Callable[[str], None],
) -> dict[str, float] | None:
    """pgvector's HNSW over bit(64) with bit_hamming_ops, where the vector extension exists."""
    available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if available is None:
        return None
    progress("building the pgvector HNSW comparison")
    table = sql.Identifier(f"{index.name}_hnsw")
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    try:
        conn.execute(
            sql.SQL("CREATE TABLE {} AS SELECT key, fingerprint::bit(64) AS bits FROM {}").format(
                table, index.table
            )
        )
        conn.execute("SET maintenance_work_mem = '1GB'")  # pgvector builds far faster when the graph fits
        began = time.perf_counter()
        conn.execute(sql.SQL("CREATE INDEX ON {} USING hnsw (bits bit_hamming_ops)").format(table))
        conn.execute("RESET maintenance_work_mem")
        build_s = time.perf_counter() - began
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
        k = index.plan.max_distance
        statement = sql.SQL(
            "SELECT key FROM (SELECT key, bits FROM {} ORDER BY bits <~> %s::bigint::bit(64) LIMIT 40) AS top"
            " WHERE bit_count(bits # %s::bigint::bit(64)) <= %s"
        ).format(table)
        times, found = timed(conn, statement, [(to_signed(p), to_signed(p), k) for p in probes])
        return {
            "build_s": build_s,
            "query_p50_ms": statistics.median(times),
            "query_p99_ms": percentile(times, 0.99),
            "recall": recall_of(found, truth),
        }
    finally:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))


def server_side_ms(conn: Connection, index: Index, arguments: Sequence[tuple[object, object]]) -> list[float]:
    """Execution time inside the server of the index's near statement (its cached generic plan),
    without per-node timers (EXPLAIN's TIMING OFF), which add their own cost to every node.

    `arguments` are (sketch as stored, cutoff) pairs, as the index's near function takes them.
    """
    name = sql.Identifier(f"simdb_bench_near_{os.getpid()}")
    statement = sql.SQL(catalog.near_sql(conn, index.name))
    types = sql.SQL(", ").join([sql.SQL(index.sketch_type), sql.SQL(index.cutoff_type)])  # near's arguments
    conn.execute("SET plan_cache_mode = force_generic_plan")
    conn.execute(sql.SQL("PREPARE {} ({}) AS {}").format(name, types, statement))
    timings = []
    try:
        for sketch, cutoff in arguments:
            explain = sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) EXECUTE {}({}, {})").format(
                name, sql.Literal(sketch), sql.Literal(cutoff)
            )
            plan = conn.execute(explain).fetchone()
            if plan:
                timings.append(float(plan[0][0]["Execution Time"]))
    finally:
        conn.execute(sql.SQL("DEALLOCATE {}").format(name))
        conn.execute("RESET plan_cache_mode")
    return timings


@dataclass(frozen=True)
class IngestRun:
    """`simdb ingest` of the bench's files, end to end, into a fresh index of one mode."""

    mode: str
    jobs: int
    megabytes_per_s: float
    documents_per_s: float
    seconds: dict[str, float]  # where the time went: ingest --json's breakdown


@dataclass
class FingerprintBench:
    """One-core sketching throughput on real files, in MB/s, beside the same-run baselines: the
    numpy code before the compiled kernels (simdb.measure.previous, word features only) and the
    textbook per-shingle SimHash; then ingest end to end with --jobs 1 and 2, in both modes."""

    files: int
    megabytes: float
    features: str
    rates: dict[str, float]  # method: MB/s
    machine: dict[str, object] = field(default_factory=machine)
    ingest: list[IngestRun] = field(default_factory=list)

    def ratio(self, method: str, baseline: str) -> float | None:
        if method in self.rates and baseline in self.rates:
            return self.rates[method] / self.rates[baseline]
        return None

    def ratios(self) -> dict[str, float]:
        pairs = {
            "fingerprint v2 / before the kernels": (FINGERPRINT_V2, PREVIOUS_V2),
            "fingerprint v1 / before the kernels": (FINGERPRINT_V1, PREVIOUS_V1),
            "fingerprints v2, batched / before the kernels": (FINGERPRINTS_V2, PREVIOUS_V2),
            "fingerprints v1, batched / before the kernels": (FINGERPRINTS_V1, PREVIOUS_V1),
            "signature / before the kernels": (SIGNATURE, PREVIOUS_SIGNATURE),
            "fingerprint v2 / textbook": (FINGERPRINT_V2, TEXTBOOK),
        }
        found = {name: self.ratio(*methods) for name, methods in pairs.items()}
        return {name: value for name, value in found.items() if value is not None}

    def one_core(self, mode: str) -> tuple[str, float]:
        """The best one-core rate of the sketches an index of `mode` makes (MB/s): what an
        ingest with N threads is compared with."""
        best = max(_ONE_CORE[mode], key=lambda method: self.rates[method])
        return best, self.rates[best]

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratios": self.ratios()}

    def lines(self) -> list[str]:
        lines = [
            f"sketching on one core ({self.features}): {self.files} files, {self.megabytes:.1f} MB, "
            "best of 3 passes over texts in memory:"
        ]
        lines += [f"  {method:<56}{rate:>8.1f} MB/s" for method, rate in self.rates.items()]
        lines.append("  " + "; ".join(f"{name} x{value:.2f}" for name, value in self.ratios().items()))
        if self.ingest:
            lines.append("ingest of the same files end to end, from disk, best of 2 rounds:")
        for run in self.ingest:
            method, one_core = self.one_core(run.mode)
            spent = ", ".join(f"{step} {value:.2f}" for step, value in run.seconds.items())
            lines.append(
                f"  {run.mode} index, --jobs {run.jobs}: {run.megabytes_per_s:.1f} MB/s,"
                f" {run.documents_per_s:.0f} documents/s, x{run.megabytes_per_s / one_core:.2f} the one-core"
                f" rate of {method.split(' (')[0]} (seconds: {spent})"
            )
        return lines


def bench_ingest(
    conn: Connection,
    paths: Sequence[str],
    features: Features,
    measured: FingerprintBench,
    jobs: Sequence[int],
    rounds: int = 2,
) -> None:
    """`simdb ingest` of the same files into a fresh scratch index per mode and --jobs value, from
    the files on disk (so reading is timed too); the MB are the text's, as for the one-core rates.
    The best of `rounds`, taken in turn, as the one-core rates are."""
    runs: dict[tuple[str, int], IngestRun] = {}
    for _ in range(rounds):
        for spec in (SimhashSpec.newest(), JaccardSpec()):
            for count in jobs:
                name = f"simdb_bench_ingest_{os.getpid()}_{spec.mode}_{count}"
                index = indexes.create(conn, name, spec, features=features)
                try:
                    began = time.perf_counter()
                    items = readers.read(paths, readers.Options(skip_errors=True))
                    report = ingest.ingest(conn, index, items, jobs=count)
                    elapsed = time.perf_counter() - began
                finally:
                    indexes.drop(conn, name)
                rates = measured.megabytes / elapsed, report.stored / elapsed
                run = IngestRun(spec.mode, count, *rates, dict(report.seconds))
                best = runs.get((spec.mode, count))
                if best is None or run.megabytes_per_s > best.megabytes_per_s:
                    runs[spec.mode, count] = run
    measured.ingest = list(runs.values())


FINGERPRINT_V2 = "simdb fingerprint, spec v2 (kernels)"
FINGERPRINTS_V2 = "simdb fingerprints, spec v2, a batch of documents a call"
FINGERPRINTS_V1 = "simdb fingerprints, spec v1, a batch of documents a call"
FINGERPRINT_V1 = "simdb fingerprint, spec v1 (kernels)"
SIGNATURE = "simdb signature, spec v2, 128 permutations (kernels)"
PREVIOUS_V2 = "before the kernels (numpy): fingerprint spec v2"
PREVIOUS_V1 = "before the kernels (numpy): fingerprint spec v1"
PREVIOUS_SIGNATURE = "before the kernels (numpy): signature"
TEXTBOOK = "textbook SimHash (xxh3 of each shingle's text)"


def straightforward_fingerprint(text: str, n: int = 3) -> int:
    """The textbook method, for comparison: xxh3 of each shingle's text, numpy bit counting."""
    words = re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())
    if not words:
        raise EmptyDocument("no tokens")
    shingles = [" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))]
    hashes = np.fromiter(
        (xxhash.xxh3_64_intdigest(s.encode("utf-8")) for s in shingles), dtype=np.uint64, count=len(shingles)
    )
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    ones = bits.sum(axis=0, dtype=np.int64)
    return int.from_bytes(np.packbits(2 * ones > len(hashes), bitorder="little").tobytes(), "little")


_BATCH = 500  # documents a call of simhash.fingerprints in bench_fingerprint
# the one-core rates of the sketches each mode's index makes
_ONE_CORE = {SimhashSpec.mode: (FINGERPRINT_V2, FINGERPRINTS_V2), JaccardSpec.mode: (SIGNATURE,)}


def _batched(texts: list[str], features: Features, spec: int) -> None:
    """simhash.fingerprints of the texts, _BATCH documents a call."""
    for at in range(0, len(texts), _BATCH):
        fingerprints(texts[at : at + _BATCH], features, spec)


def _each(function: Callable[[str], object]) -> Callable[[list[str]], object]:
    """A one-document method applied to each text in turn (a text without shingles passed over)."""

    def each(texts: list[str]) -> None:
        for text in texts:
            with contextlib.suppress(EmptyDocument):
                function(text)

    return each


def bench_fingerprint(paths: Sequence[str], features: Features, rounds: int = 3) -> FingerprintBench:
    """Best of `rounds` passes over the text files below `paths`, already read into memory; the
    methods interleaved round by round, so that the machine's drift touches each alike."""
    from simdb.measure import previous

    items = readers.read(paths, readers.Options(skip_errors=True))
    texts = [item.text for item in items if isinstance(item, readers.Document)]
    size = sum(len(text.encode("utf-8")) for text in texts)
    one_by_one: dict[str, Callable[[str], object]] = {
        FINGERPRINT_V2: lambda text: fingerprint(text, features, 2),
        FINGERPRINT_V1: lambda text: fingerprint(text, features, 1),
        SIGNATURE: lambda text: document_signature(text, features),
    }
    if features.kind == "word":
        one_by_one |= {
            PREVIOUS_V2: lambda text: previous.fingerprint(text, features.n, 2),
            PREVIOUS_V1: lambda text: previous.fingerprint(text, features.n, 1),
            PREVIOUS_SIGNATURE: lambda text: previous.signature(text, n=features.n),
        }
    one_by_one[TEXTBOOK] = lambda text: straightforward_fingerprint(text, features.n)
    methods = {name: _each(function) for name, function in one_by_one.items()}
    for name, spec in ((FINGERPRINTS_V2, 2), (FINGERPRINTS_V1, 1)):  # as ingest's threads call it
        methods[name] = functools.partial(_batched, features=features, spec=spec)
    for function in methods.values():  # the first call loads (or compiles) the kernels
        function(["warm up the kernels"])
    best = dict.fromkeys(methods, math.inf)
    for _ in range(rounds):
        for name, function in methods.items():
            began = time.perf_counter()
            function(texts)
            best[name] = min(best[name], time.perf_counter() - began)
    rates = {name: size / 1e6 / seconds for name, seconds in best.items()}
    return FingerprintBench(len(texts), size / 1e6, str(features), rates)


@dataclass
class BenchReport:
    """One `simdb bench` run: the index figures, and fingerprinting figures when asked for."""

    index: IndexBench
    fingerprinting: FingerprintBench | None = None

    def as_dict(self) -> dict[str, object]:
        report = self.index.as_dict()
        if self.fingerprinting is not None:
            report["fingerprint"] = self.fingerprinting.as_dict()
        return report

    def lines(self) -> list[str]:
        return format_report(self.index, self.fingerprinting)


def format_report(figures: IndexBench, fingerprinting: FingerprintBench | None = None) -> list[str]:
    """The human-readable lines of a bench run."""
    host = figures.machine
    lines = [f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}, {figures.server}"]
    if fingerprinting is not None:
        lines += fingerprinting.lines()
    f = figures
    ratio = f.against_hand()
    hand_blocks = f.max_distance + 1
    lines += [
        f"index: {f.rows} rows, k={f.max_distance}, {f.blocks} blocks, {f.tables} tables, "
        f"{f.bytes_per_row:.0f} bytes/row with indexes; bulk-loaded at {f.load_rows_per_s:.0f} rows/s, "
        f"then the {f.tables} B-trees ({'prefix, fingerprint' if f.covering else 'prefix'}) built in"
        f" {f.index_build_s:.1f} s",
        f"side by side, the same {f.queries} queries (client-side, prepared psycopg; best p50 of {f.rounds} "
        "interleaved rounds):",
        f"  {'':<52}{'p50 ms':>8}{'p99 ms':>8}{'bytes/row':>11}{'load s':>8}{'recall':>8}",
        f"  {'simdb.near(NAME, fp, k)':<52}{f.query_p50_ms:>8.3f}{f.query_p99_ms:>8.3f}"
        f"{f.bytes_per_row:>11.0f}{f.load_s:>8.1f}{f.recall:>8.3f}",
        f"  {'simdb_internal.NAME__near(fp, k), no dispatch':<52}{f.direct_p50_ms:>8.3f}",
        f"  {f'hand-written: fp + {hand_blocks} block columns, a B-tree each':<52}{f.hand_p50_ms:>8.3f}"
        f"{f.hand_p99_ms:>8.3f}{f.hand_bytes_per_row:>11.0f}{f.hand_load_s:>8.1f}{f.hand_recall:>8.3f}",
        f"  {'SELECT %s::bigint round trip':<52}{f.roundtrip_p50_ms:>8.3f}",
        f"  simdb / hand-written: bytes/row x{ratio['bytes_per_row']:.2f}, load x{ratio['load']:.2f}, "
        f"p50 above the round trip x{ratio['near_above_roundtrip']:.2f} (NAME__near "
        f"x{ratio['direct_above_roundtrip']:.2f}); dispatch through simdb.near {ratio['dispatch_ms']:.3f} ms",
        f"simdb.near server-side p50 {f.server_p50_ms:.3f} ms (the index's statement inside PostgreSQL); "
        f"on first touch (the same queries' first run, their prefixes not read before) p50 "
        f"{f.first_touch_p50_ms:.3f} ms, p99 {f.first_touch_p99_ms:.3f} ms",
        f"brute-force bit_count scan ({f.brute_force_queries} queries): p50 {f.brute_force_p50_ms:.1f} ms, "
        f"recall {f.brute_force_recall:.3f}; simdb.near is x{f.speedup:.0f} faster",
        f"all pairs within {f.max_distance} bits: simdb pairs (sorted in memory) {f.pairs} pairs in "
        f"{f.pairs_seconds:.2f} s, peak RSS {f.pairs_peak_rss_mb:.0f} MB, recall of the planted pairs "
        f"{f.pairs_recall:.3f}; in SQL, simdb.pairs "
        + (
            f"{f.sql_pairs_seconds:.2f} s"
            if f.sql_pairs is not None
            else f"stopped after {f.sql_pairs_seconds:.0f} s"
        )
        + "; the hand-written table's self-joins "
        + (
            f"{f.hand_pairs} pairs in {f.hand_pairs_seconds:.2f} s (simdb pairs x{ratio['pairs']:.2f})"
            if f.hand_pairs is not None
            else f"stopped after {f.hand_pairs_seconds:.0f} s (simdb pairs < x{ratio['pairs']:.3f})"
        ),
    ]
    if f.predicted:
        p = f.predicted
        lines.append(
            f"simdb plan's prediction for this plan at {f.rows} rows, measured (predicted): online p50 "
            f"{f.query_p50_ms:.3f} ms ({p['online_ms']:.3f}), bytes/row {f.bytes_per_row:.0f} "
            f"({p['bytes_per_row']:.0f}), simdb.pairs in SQL {f.sql_pairs_seconds:.1f} s "
            f"({p['sql_pairs_s']:.1f})"
        )
    if f.truth_from != "scan":
        lines.append(
            "recall's truth: each query's planted neighbours and, for the first "
            f"{f.brute_force_queries}, what the brute-force scan found (a numpy scan of every row "
            "for every query would take longer than the benchmark)"
        )
    if f.added is not None:
        a = f.added
        lines.append(
            f"pairs --new after {a.rows} rows added (1%): {a.pairs} pairs in {a.seconds:.2f} s"
            f"{'' if a.exact else ' (NOT the pairs of the added rows: a bug)'}; a full run of the same "
            f"rows: {a.full_pairs} pairs in {a.full_seconds:.2f} s "
            f"(pairs --new x{a.seconds / a.full_seconds:.3f})"
        )
    if f.hnsw is not None:
        h = f.hnsw
        lines.append(
            f"pgvector HNSW on bit(64), bit_hamming_ops, top 40 then <= {f.max_distance} bits: built in "
            f"{h['build_s']:.1f} s; p50 {h['query_p50_ms']:.3f} ms, p99 {h['query_p99_ms']:.3f} ms; "
            f"recall {h['recall']:.3f}"
        )
    else:
        lines.append(f"pgvector HNSW: {f.hnsw_note}")
    return lines
