"""Both modes on the same real text with planted word edits: the pairs each kind of index finds,
scored against exact shingle Jaccard, with the storage, load, query and pairs time of each.

The corpus is the first `sample` documents read, plus `copies` edited copies of documents
picked at random: each copy has a share of its words, drawn uniformly up to `max_edit`, replaced,
inserted or deleted (a third each), so its Jaccard with the original spreads across the threshold.
The truth is every pair with exact Jaccard >= threshold (calibrate's prefix filtering, no pair
missed); a mode's precision is the share of its pairs in the truth, its recall the share of the
truth it finds. Pairs are compared unordered, as PostgreSQL's collation orders keys its own way.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field

import numpy as np
from psycopg import sql

from simdb import duplicates, ingest, query
from simdb.db.connection import Connection
from simdb.index import lifecycle as indexes
from simdb.index import names
from simdb.index.modes import Index, JaccardSpec, SimhashSpec, Sketch, Spec
from simdb.index.modes.jaccard import bigint_array
from simdb.measure.baseline import hand_bands
from simdb.measure.bench import machine, percentile, server_side_ms, timed
from simdb.measure.calibrate import similar_pairs
from simdb.sketch.bits import to_signed
from simdb.sketch.features import EmptyDocument, Features, feature_hashes
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD, choose_banding, signature
from simdb.sketch.simhash import DEFAULT_MAX_DISTANCE
from simdb.sources.readers import Document


@dataclass
class ModeFigures:
    """What one kind of index found on the corpus, and what it cost."""

    mode: str
    kind: str  # the mode of index it is ("jaccard" or "simhash"); the hand-written table's: jaccard
    parameters: str
    pairs: int
    true_pairs: int
    precision: float
    recall: float
    bytes_per_row: float
    load_seconds: float  # ingest of the corpus from text (the hand-written table: its bulk load)
    bulk_seconds: float  # COPY of the random rows' sketches and the B-tree builds (hand: all rows)
    query_p50_ms: float
    query_p99_ms: float
    server_p50_ms: float  # execution inside the server, without the round trip
    pairs_seconds: float
    padding_pairs: int  # pairs involving a padding row (random, so any is a false positive)


@dataclass
class Evaluation:
    """Both modes on one corpus."""

    documents: int
    copies: int
    max_edit: float
    threshold: float
    similar_pairs: int  # pairs with exact Jaccard >= threshold
    queries: int
    padding_rows: int
    server: str
    modes: list[ModeFigures]
    roundtrip_p50_ms: float = float("nan")  # `SELECT` of a signature: the bare prepared round trip
    machine: dict[str, object] = field(default_factory=machine)

    def against_hand(self) -> dict[str, dict[str, float]]:
        """Each jaccard index's ratios to the hand-written band table, which answers the same
        queries: storage, bulk load (only with padding rows: without, the indexes bulk-load
        nothing), and query time above the round trip and inside the server."""
        hand = next((m for m in self.modes if m.mode == HAND_WRITTEN), None)
        if hand is None:
            return {}
        above = max(hand.query_p50_ms - self.roundtrip_p50_ms, 1e-6)  # (never 0: a timer's resolution)
        return {
            m.mode: {
                "bytes_per_row": m.bytes_per_row / hand.bytes_per_row,
                **({"bulk": m.bulk_seconds / hand.bulk_seconds} if self.padding_rows else {}),
                "query_above_roundtrip": (m.query_p50_ms - self.roundtrip_p50_ms) / above,
                "server": m.server_p50_ms / hand.server_p50_ms,
                "pairs": m.pairs_seconds / hand.pairs_seconds,
            }
            for m in self.modes
            if m is not hand and m.kind == hand.kind
        }

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "vs_hand_written": self.against_hand()}

    def lines(self) -> list[str]:
        return format_evaluation(self)


def edit_words(rng: np.random.Generator, text: str, rate: float) -> str:
    """`text` with round(rate * words) single-word edits: replace, insert or delete, a third each."""
    words = text.split()
    vocabulary = list(words)
    for _ in range(round(rate * len(words))):
        operation, position = int(rng.integers(3)), int(rng.integers(len(words)))
        if operation == 0:
            words[position] = vocabulary[int(rng.integers(len(vocabulary)))]
        elif operation == 1:
            words.insert(position, vocabulary[int(rng.integers(len(vocabulary)))])
        elif len(words) > 1:
            del words[position]
    return " ".join(words)


def planted_corpus(
    documents: Iterable[Document], sample: int, copies: int, max_edit: float, seed: int
) -> tuple[list[Document], list[Document]]:
    """The first `sample` documents that have shingles, and edited copies of `copies` of them."""
    originals: list[Document] = []
    for document in documents:
        if len(originals) >= sample:
            break
        try:
            feature_hashes(document.text)
        except EmptyDocument:
            continue
        originals.append(Document(document.key, document.text, 0))
    rng = np.random.default_rng(seed)
    planted = []
    picked = rng.choice(len(originals), size=min(copies, len(originals)), replace=False)
    for number, original in enumerate(originals[int(i)] for i in picked):
        rate = float(rng.uniform(0.0, max_edit))
        text = edit_words(rng, original.text, rate)
        planted.append(Document(f"{original.key}#copy{number}-edit{rate:.3f}", text, 0))
    return originals, planted


PADDING = "pad:"
HAND_WRITTEN = "hand-written"
_PADDING_CHUNK = 10_000


def _padding(index: Index, rows: int, seed: int) -> Iterator[tuple[str, Sketch]]:
    """Random fingerprints or signatures under keys pad:0, pad:1, ..."""
    rng = np.random.default_rng(seed + 1)
    for start in range(0, rows, _PADDING_CHUNK):
        sketches = index.random_sketches(rng, min(_PADDING_CHUNK, rows - start))
        for offset, sketch in enumerate(sketches):
            yield f"{PADDING}{start + offset}", sketch


def _unordered(pairs: Iterable[tuple[str, str]]) -> set[frozenset[str]]:
    return {frozenset(pair) for pair in pairs}


def evaluate(
    conn: Connection,
    documents: Iterable[Document],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    permutations: int = DEFAULT_PERMUTATIONS,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    sample: int = 5000,
    copies: int = 2000,
    max_edit: float = 0.1,
    queries: int = 500,
    padding_rows: int = 0,
    seed: int = 1,
    jobs: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> Evaluation:
    """Load the planted corpus into a scratch jaccard index and a scratch simhash index; score both.

    `padding_rows` random rows (keys pad:N) are bulk-loaded first, to measure storage and
    latency at scale; they are unrelated to the corpus, and pairs involving them are counted apart.
    """
    originals, planted = planted_corpus(documents, sample, copies, max_edit, seed)
    corpus = originals + planted
    progress(f"exact Jaccard of every pair of {len(corpus)} documents at or above {threshold}")
    sets = [frozenset(feature_hashes(document.text, Features()).tolist()) for document in corpus]
    truth = _unordered((corpus[a].key, corpus[b].key) for a, b in similar_pairs(sets, threshold))
    version = conn.execute("SHOW server_version").fetchone()
    evaluation = Evaluation(
        documents=len(corpus),
        copies=len(planted),
        max_edit=max_edit,
        threshold=threshold,
        similar_pairs=len(truth),
        queries=min(queries, len(corpus)),
        padding_rows=padding_rows,
        server=f"PostgreSQL {version[0] if version else '?'}",
        modes=[],
    )
    picked = np.random.default_rng(seed).choice(len(corpus), size=evaluation.queries, replace=False)
    probes = [corpus[int(i)].key for i in picked]
    # The jaccard mode as it is (signature spec v2, verified by its check), as it was (v1, by the
    # signature), and simhash, on the same corpus in the same run.
    specs: list[Spec] = [
        JaccardSpec(threshold, permutations),
        JaccardSpec(threshold, permutations, signature_spec=2),
        JaccardSpec(threshold, permutations, signature_spec=1),
        SimhashSpec.newest(max_distance=max_distance),
    ]
    for spec in specs:
        name = f"evaluate_{spec.mode}_{os.getpid()}"
        index = indexes.create(conn, name, spec, expected_rows=len(corpus) + padding_rows)
        try:
            bulk_seconds = 0.0
            if padding_rows:
                progress(f"bulk-loading {padding_rows} random rows into {index.mode} index {name}")
                bulk = ingest.bulk_load(conn, index, _padding(index, padding_rows, seed))
                bulk_seconds = bulk.copy_seconds + bulk.index_seconds
            progress(f"loading {len(corpus)} documents into {index.mode} index {name}")
            began = time.perf_counter()
            ingest.ingest(conn, index, corpus, jobs=jobs)
            loaded = time.perf_counter() - began
            size = conn.execute("SELECT pg_total_relation_size(%s)", (names.qualified(name),)).fetchone()
            arguments = []
            for key in probes:
                stored = query.stored(conn, index, key)
                if stored is not None:
                    arguments.append((index.to_sql(stored.sketch), index.cutoff()))
            statement = sql.SQL("SELECT key FROM {}(%s, %s)").format(index.near_function)
            latencies, _ = timed(conn, statement, arguments)
            server = server_side_ms(conn, index, arguments[:200])
            progress(f"all pairs of {index.mode} index {name}")
            began = time.perf_counter()
            every = _unordered((pair.key_a, pair.key_b) for pair in duplicates.pairs(conn, index))
            pairs_seconds = time.perf_counter() - began
            found = {pair for pair in every if not any(key.startswith(PADDING) for key in pair)}
            hits = len(found & truth)
            evaluation.modes.append(
                ModeFigures(
                    mode=f"{index.mode} v{index.spec_version}",
                    kind=index.mode,
                    parameters=index.summary,
                    pairs=len(found),
                    true_pairs=hits,
                    precision=hits / len(found) if found else 1.0,
                    recall=hits / len(truth) if truth else 1.0,
                    bytes_per_row=(size[0] if size else 0) / (len(corpus) + padding_rows),
                    load_seconds=loaded,
                    bulk_seconds=bulk_seconds,
                    query_p50_ms=statistics.median(latencies),
                    query_p99_ms=percentile(latencies, 0.99),
                    server_p50_ms=statistics.median(server),
                    pairs_seconds=pairs_seconds,
                    padding_pairs=len(every) - len(found),
                )
            )
        finally:
            indexes.drop(conn, name)
    hand, evaluation.roundtrip_p50_ms = _hand_written(
        conn, corpus, sets, truth, probes, threshold, permutations, padding_rows, seed, progress
    )
    evaluation.modes.append(hand)
    return evaluation


def _hand_written(
    conn: Connection,
    corpus: list[Document],
    sets: list[frozenset[int]],
    truth: set[frozenset[str]],
    probes: list[str],
    threshold: float,
    permutations: int,
    padding_rows: int,
    seed: int,
    progress: Callable[[str], None],
) -> tuple[ModeFigures, float]:
    """The same corpus (and padding) in the hand-written band table, scored and timed the same way;
    and the p50 of a bare round trip carrying the same signatures."""
    banding = choose_banding(threshold, permutations)
    signatures = np.array([signature(np.array(sorted(s), dtype=np.uint64), permutations) for s in sets])
    rng = np.random.default_rng(seed + 1)
    padding = (
        rng.integers(
            0, 2**64, size=(min(_PADDING_CHUNK, padding_rows - start), permutations), dtype=np.uint64
        )
        for start in range(0, padding_rows, _PADDING_CHUNK)
    )
    numbers = {document.key: number for number, document in enumerate(corpus)}

    def key_of(number: int) -> str:
        return corpus[number].key if number < len(corpus) else f"{PADDING}{number - len(corpus)}"

    progress(f"loading {len(corpus) + padding_rows} rows into the hand-written band table")
    with hand_bands(conn, itertools.chain([signatures], padding), banding, permutations) as hand:
        probed = [signatures[numbers[key]] for key in probes]
        arguments = [
            (*[to_signed(k) for k in banding.keys(values)], bigint_array(values), threshold)
            for values in probed
        ]
        latencies, _ = timed(conn, hand.query(), arguments)
        carried = [(bigint_array(values),) for values in probed]
        roundtrip, _ = timed(conn, sql.SQL("SELECT %s::bigint[]"), carried)
        server = [
            float(plan[0][0]["Execution Time"])
            for plan in (
                conn.execute(
                    sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) {}").format(hand.query()), args
                ).fetchone()
                for args in arguments[:200]
            )
            if plan
        ]
        progress("all pairs of the hand-written band table")
        began = time.perf_counter()
        every = {frozenset((key_of(a), key_of(b))) for a, b in conn.execute(hand.pairs(), (threshold,))}
        pairs_seconds = time.perf_counter() - began
        found = {pair for pair in every if not any(key.startswith(PADDING) for key in pair)}
        hits = len(found & truth)
        figures = ModeFigures(
            mode=HAND_WRITTEN,
            kind=JaccardSpec.mode,
            parameters=f"{banding.bands} bands of {banding.rows} rows as plain columns, equal positions",
            pairs=len(found),
            true_pairs=hits,
            precision=hits / len(found) if found else 1.0,
            recall=hits / len(truth) if truth else 1.0,
            bytes_per_row=hand.bytes_per_row,
            load_seconds=hand.load_seconds,
            bulk_seconds=hand.load_seconds,
            query_p50_ms=statistics.median(latencies),
            query_p99_ms=percentile(latencies, 0.99),
            server_p50_ms=statistics.median(server) if server else float("nan"),
            pairs_seconds=pairs_seconds,
            padding_pairs=len(every) - len(found),
        )
        return figures, statistics.median(roundtrip)


def format_evaluation(result: Evaluation) -> list[str]:
    """The human-readable lines of an evaluation."""
    host = result.machine
    lines = [
        f"machine: {host['cpu']}, {host['cores']} cores, Python {host['python']}, {result.server}",
        f"corpus: {result.documents} documents ({result.copies} copies with up to "
        f"{result.max_edit:.0%} of their words edited); {result.similar_pairs} pairs with exact word-3 "
        f"Jaccard >= {result.threshold}"
        + (f"; plus {result.padding_rows} random rows in each index" if result.padding_rows else ""),
        f"{'mode':<12} {'precision':>9} {'recall':>6} {'pairs':>7} {'bytes/row':>9} {'load s':>7} "
        f"{'bulk s':>7} {'query p50':>9} {'p99 ms':>7} {'server':>7} {'pairs s':>7}  parameters",
    ]
    for m in result.modes:
        lines.append(
            f"{m.mode:<12} {m.precision:>9.3f} {m.recall:>6.3f} {m.pairs:>7} {m.bytes_per_row:>9.0f} "
            f"{m.load_seconds:>7.1f} {m.bulk_seconds:>7.1f} {m.query_p50_ms:>9.3f} {m.query_p99_ms:>7.3f} "
            f"{m.server_p50_ms:>7.3f} "
            f"{m.pairs_seconds:>7.2f}"
            f"  {m.parameters}"
        )
    ratios = result.against_hand()
    if ratios:
        lines.append(
            f"against the hand-written table (round trip p50 {result.roundtrip_p50_ms:.3f} ms): "
            + "; ".join(
                f"{mode} bytes/row x{r['bytes_per_row']:.2f}, "
                + (f"bulk x{r['bulk']:.2f}, " if "bulk" in r else "")
                + f"p50 above the round trip x{r['query_above_roundtrip']:.2f}, "
                f"server x{r['server']:.2f}, pairs x{r['pairs']:.2f}"
                for mode, r in ratios.items()
            )
        )
    if result.padding_rows:
        lines.append(
            "pairs involving a random row: " + ", ".join(f"{m.mode} {m.padding_pairs}" for m in result.modes)
        )
    lines.append(
        f"query: {result.queries} stored documents through each index's own near function, client-side "
        "(prepared psycopg); server: execution time of the same statement inside PostgreSQL"
    )
    lines.append(
        "hand-written: the MinHash LSH table one would write without simdb (signature bigint[], the band "
        "keys as plain columns with a B-tree each, equal positions counted); its load is COPY of the "
        "computed signatures and the B-tree builds, where the indexes' load is ingest from text; "
        "bulk s: the indexes' bulk load of the random rows (COPY, then the B-trees), the hand-written "
        "table's load of all its rows"
    )
    return lines
