"""Sketch quality on the user's own folders: precision and recall of each fingerprint against the
exact shingle Jaccard of every pair, with the simplest hand-written SimHash beside ours.

Methods, per corpus: SimHash spec v1 and v2 at 64 bits (`distance <= k` for k = 0..6) and spec
v2 at 128 bits (k = 0..16), a plain set-weighted SimHash written the textbook way (lower-case
`\\w+` tokens, the set of word n-gram strings, xxh3 of each, weight 1, the same fold; xxh3_128
for 128 bits), and a jaccard index at the threshold (shared band key, estimate >= threshold, as
the index works).

The truth is every pair with exact Jaccard >= threshold of the shingle sets. For text it is
exact (calibrate's prefix filtering). Byte n-gram sets are too large for that in Python, so for
bytes features the candidates are the pairs sharing a MinHash band tuned to Jaccard 0.5 (a pair
at 0.8 shares one of the 32 bands of 4 rows with probability 1 - 5e-8), each verified exactly.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.measure.bench import machine
from simdb.measure.calibrate import band_candidates, close_pairs, lsh_pairs, similar_pairs
from simdb.sketch.features import EmptyDocument, Features, feature_hashes
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, UInt64Array, choose_banding, sketch
from simdb.sketch.simhash import fold, simhash
from simdb.sources.readers import Document

MAX_K = {64: 6, 128: 16}  # the distances measured, by fingerprint width
CANDIDATE_THRESHOLD = 0.5  # bytes features: band tuning of the candidate pairs

Pair = tuple[int, int]


def plain_set_simhash(text: str, n: int = 3, bits: int = 64) -> int:
    """The hand-written baseline: the set of lower-case word n-grams, xxh3 each (64 or 128 bits),
    weight 1, fold."""
    words = re.findall(r"\w+", text.lower())
    grams = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    digest = xxhash.xxh3_64_intdigest if bits == 64 else xxhash.xxh3_128_intdigest
    raw = b"".join(digest(g.encode("utf-8")).to_bytes(bits // 8, "little") for g in grams)
    table = np.frombuffer(raw, dtype=np.uint8).reshape(len(grams), -1)
    return fold(np.unpackbits(table, axis=1, bitorder="little").sum(axis=0), len(grams))


# The fingerprints measured: (name, width, SimHash spec or None for the plain baseline).
METHODS = (
    ("simdb spec v1", 64, 1),
    ("simdb spec v2", 64, 2),
    ("plain set-weighted", 64, None),
    ("simdb spec v2, 128 bits", 128, 2),
    ("plain set-weighted, 128 bits", 128, None),
)


def _words(prints: list[int], bits: int) -> npt.NDArray[np.uint64]:
    """Fingerprints as rows of 64-bit words (what close_pairs takes)."""
    raw = b"".join(value.to_bytes(bits // 8, "little") for value in prints)
    return np.frombuffer(raw, dtype=np.uint64).reshape(len(prints), bits // 64)


@dataclass
class MethodQuality:
    """One fingerprint on one corpus: pairs, precision and recall within each k = 0..MAX_K[bits]."""

    method: str
    bits: int
    precision: list[float]
    recall: list[float]
    pairs: list[int]
    unrelated_at_zero: int  # pairs at distance 0 with Jaccard < 0.5
    largest_share: float  # share of the documents holding the commonest fingerprint


@dataclass
class CorpusQuality:
    label: str
    documents: int
    similar_pairs: int
    methods: list[MethodQuality] = field(default_factory=list)
    jaccard_mode: dict[str, float] = field(default_factory=dict)  # precision, recall, pairs


@dataclass
class Quality:
    """`simdb bench --quality`: every corpus, every method."""

    features: str
    threshold: float
    corpora: list[CorpusQuality]
    machine: dict[str, object] = field(default_factory=machine)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def lines(self) -> list[str]:
        lines = [f"precision / recall at Jaccard >= {self.threshold} of {self.features} shingles"]
        for corpus in self.corpora:
            lines.append(
                f"{corpus.label}: {corpus.documents} documents, {corpus.similar_pairs} pairs at or above "
                f"{self.threshold}"
            )
            for bits, most in MAX_K.items():
                lines.append(
                    f"  {'method':<30}{'d=0&J<0.5':>10}{'top share':>10}"
                    + "".join(f"{'k=' + str(k):>13}" for k in range(most + 1))
                )
                for m in corpus.methods:
                    if m.bits == bits:
                        cells = "".join(
                            f"{p:>7.3f}/{r:.3f}" for p, r in zip(m.precision, m.recall, strict=True)
                        )
                        lines.append(
                            f"  {m.method:<30}{m.unrelated_at_zero:>10}{m.largest_share:>10.3f}{cells}"
                        )
            j = corpus.jaccard_mode
            lines.append(
                f"  {'jaccard mode':<24}precision {j['precision']:.3f} recall {j['recall']:.3f} "
                f"({j['pairs']:.0f} pairs, {DEFAULT_PERMUTATIONS} permutations at threshold {self.threshold})"
            )
        return lines


def _jaccard(a: UInt64Array, b: UInt64Array) -> float:
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)


def _share(part: int, whole: int) -> float:
    """part / whole, and 1.0 for nothing out of nothing (no pairs found: no false ones)."""
    return part / whole if whole else 1.0


def _score(
    method: str,
    bits: int,
    found: dict[Pair, int],
    similar: Callable[..., bool],
    truth: set[Pair],
    prints: list[int],
) -> MethodQuality:
    within = [[pair for pair, distance in found.items() if distance <= k] for k in range(MAX_K[bits] + 1)]
    hits = [sum(map(similar, pairs)) for pairs in within]
    return MethodQuality(
        method,
        bits,
        precision=[_share(h, len(pairs)) for h, pairs in zip(hits, within, strict=True)],
        recall=[_share(h, len(truth)) for h in hits],
        pairs=[len(pairs) for pairs in within],
        unrelated_at_zero=sum(not similar(p, 0.5) for p, d in found.items() if d == 0),
        largest_share=Counter(prints).most_common(1)[0][1] / len(prints) if prints else 0.0,
    )


def measure_corpus(
    label: str, documents: Iterable[Document], features: Features, threshold: float
) -> CorpusQuality:
    """Every method on one corpus, scored against the exact Jaccard of its shingle sets."""
    sets: list[UInt64Array] = []
    prints: dict[str, list[int]] = defaultdict(list)
    signatures: list[UInt64Array] = []
    for document in documents:
        try:
            hashes = feature_hashes(document.content if features.binary else document.text, features)
        except EmptyDocument:
            continue
        distinct = np.unique(hashes)
        sets.append(distinct)
        for method, bits, spec in METHODS:
            if spec is not None:
                prints[method].append(simhash(hashes, spec, bits))
            elif features.kind == "word":  # the textbook baseline is of word n-grams
                prints[method].append(plain_set_simhash(document.text, features.n, bits))
        signatures.append(sketch(distinct, DEFAULT_PERMUTATIONS))
    known: dict[Pair, float] = {}

    def similar(pair: Pair, at_least: float = threshold) -> bool:
        if pair not in known:
            known[pair] = _jaccard(sets[pair[0]], sets[pair[1]])
        return known[pair] >= at_least

    if features.binary:
        candidates: Iterable[Pair] = band_candidates(signatures, choose_banding(CANDIDATE_THRESHOLD))
    else:
        candidates = similar_pairs([frozenset(s.tolist()) for s in sets], threshold)
    widths = {method: bits for method, bits, _ in METHODS}
    found = {
        method: close_pairs(_words(values, widths[method]), MAX_K[widths[method]])
        for method, values in prints.items()
    }
    banded = lsh_pairs(signatures, threshold)
    # Pairs any method found count too, so the truth misses nothing a method could be credited with.
    truth = {pair for pair in itertools.chain(candidates, banded, *found.values()) if similar(pair)}
    corpus = CorpusQuality(label, len(sets), len(truth))
    for method, values in prints.items():
        corpus.methods.append(_score(method, widths[method], found[method], similar, truth, values))
    hits = sum(map(similar, banded))
    corpus.jaccard_mode = {
        "precision": _share(hits, len(banded)),
        "recall": _share(hits, len(truth)),
        "pairs": len(banded),
    }
    return corpus


def quality(
    corpora: Iterable[tuple[str, Iterable[Document]]], features: Features, threshold: float
) -> Quality:
    """Every method on every (label, documents) corpus."""
    measured = [measure_corpus(label, documents, features, threshold) for label, documents in corpora]
    return Quality(str(features), threshold, measured)
