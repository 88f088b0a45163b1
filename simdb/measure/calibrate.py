"""Calibration on the user's own documents: how well does "Hamming distance <= k" find pairs whose
exact shingle Jaccard similarity is high, and how well does a jaccard index with that threshold?

Candidate pairs for Jaccard come from an inverted index on each document's prefix of rarest-first
shingles (prefix filtering: two sets with Jaccard >= t must share one of them), so no pair with
Jaccard >= the lowest threshold is missed and not all pairs are compared. Pairs within distance
MAX_K come from the fingerprints by brute force. The jaccard mode is played out in Python exactly
as its index works: pairs sharing a band key of the bands chosen for t, estimated >= t.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from simdb.errors import InputError
from simdb.sketch.features import EmptyDocument, Features, feature_hashes
from simdb.sketch.minhash import (
    DEFAULT_PERMUTATIONS,
    Banding,
    UInt64Array,
    choose_banding,
    similarity,
    sketch,
)
from simdb.sketch.simhash import simhash
from simdb.sources.readers import Document

T = TypeVar("T")

THRESHOLDS = (0.8, 0.9, 0.95)
MAX_K = 8
_ROWS_PER_STEP = 512


@dataclass
class Calibration:
    """Precision and recall of distance <= k against Jaccard >= t, for k = 0..MAX_K."""

    documents: int
    features: str
    similar: dict[float, int]  # pairs with Jaccard >= t
    precision: dict[float, list[float]] = field(default_factory=dict)
    recall: dict[float, list[float]] = field(default_factory=dict)
    close: list[int] = field(default_factory=list)  # pairs with distance <= k
    # what each distance means here: Jaccard (median, 10th percentile) of the pairs at exactly d
    meaning: list[tuple[float, float] | None] = field(default_factory=list)
    jaccard_mode: dict[float, tuple[float, float]] = field(default_factory=dict)  # t: (precision, recall)
    threshold: float = 0.9  # the Jaccard that counts as a near-duplicate, for the recommendation
    wanted_recall: float = 0.9  # the recall the recommended k must reach
    read: int = 0  # documents read, of which `documents` were sampled

    def recommend(self, threshold: float | None = None, wanted_recall: float | None = None) -> int | None:
        """The smallest k whose recall at `threshold` reaches `wanted_recall`, if any (None too
        when no pair of the sample has Jaccard >= `threshold`: there is no recall to reach)."""
        threshold = self.threshold if threshold is None else threshold
        wanted = self.wanted_recall if wanted_recall is None else wanted_recall
        if not self.similar[threshold]:
            return None
        for k, value in enumerate(self.recall[threshold]):
            if value >= wanted:
                return k
        return None

    def as_dict(self) -> dict[str, object]:
        return {
            "documents": self.documents,
            "documents_read": self.read,
            "features": self.features,
            "similar_pairs": {str(t): n for t, n in self.similar.items()},
            "close_pairs": self.close,
            "precision": {str(t): v for t, v in self.precision.items()},
            "recall": {str(t): v for t, v in self.recall.items()},
            "recommended_k": self.recommend(),
            "jaccard_at_distance": [
                None if found is None else {"distance": d, "median": found[0], "p10": found[1]}
                for d, found in enumerate(self.meaning)
            ],
            "jaccard_mode": {
                str(t): {"precision": p, "recall": r} for t, (p, r) in self.jaccard_mode.items()
            },
        }

    @property
    def _sampled(self) -> str:
        return f" (a random sample of the {self.read} read)" if self.read > self.documents else ""

    def lines(self) -> list[str]:
        lines = [
            f"{self.documents} documents{self._sampled}, features {self.features}; pairs with Jaccard >= "
            + ", ".join(f"{t}: {n}" for t, n in self.similar.items()),
            f"{'k':>2} {'pairs':>8}  " + "  ".join(f"J>={t:<4} prec  rec" for t in THRESHOLDS),
        ]
        for distance in range(MAX_K + 1):
            cells = "  ".join(
                f"{'':4}{self.precision[t][distance]:>6.3f} {self._recall(t, distance):>5}"
                for t in THRESHOLDS
            )
            lines.append(f"{distance:>2} {self.close[distance]:>8}  {cells}")
        lines.append("what a distance means here: the Jaccard of the pairs at exactly d (median, 10th pct)")
        lines.append(
            "  "
            + "  ".join(
                f"d={d}: " + ("none" if found is None else f"{found[0]:.2f} {found[1]:.2f}")
                for d, found in enumerate(self.meaning)
            )
        )
        lines.append(
            "jaccard mode (a jaccard index with --threshold t): "
            + "; ".join(
                f"J>={t}: precision {p:.3f} recall {r:.3f}" for t, (p, r) in self.jaccard_mode.items()
            )
        )
        k, t, wanted = self.recommend(), self.threshold, self.wanted_recall
        if not self.similar[t]:
            lines.append(
                f"no pair in the sample has Jaccard >= {t}: no k to recommend"
                f" (try --threshold {min(THRESHOLDS)})"
            )
        elif k is not None:
            lines.append(
                f"recommended: --max-distance {k} (the smallest k with recall >= {wanted} at Jaccard >= {t})"
            )
        else:
            lines.append(
                f"no k up to {MAX_K} reaches recall {wanted} at Jaccard >= {t}: 64-bit SimHash "
                f"finds close copies, not looser similarity; use --mode jaccard --threshold {t}"
            )
        return lines

    def _recall(self, threshold: float, k: int) -> str:
        """A recall cell: a dash where no pair has Jaccard >= threshold (nothing to find)."""
        return f"{self.recall[threshold][k]:.3f}" if self.similar[threshold] else "–"


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / len(a | b)


def similar_pairs(sets: list[frozenset[int]], lowest: float) -> dict[tuple[int, int], float]:
    """Every pair with Jaccard >= lowest, exactly, via prefix filtering on rarest-first order."""
    frequency: Counter[int] = Counter()
    for shingles in sets:
        frequency.update(shingles)
    index: dict[int, list[int]] = defaultdict(list)
    found: dict[tuple[int, int], float] = {}
    for number, shingles in enumerate(sets):
        ordered = sorted(shingles, key=lambda s: (frequency[s], s))
        prefix = ordered[: len(ordered) - math.ceil(lowest * len(ordered)) + 1]
        candidates = {other for shingle in prefix for other in index[shingle]}
        for other in candidates:
            similarity = jaccard(sets[other], shingles)
            if similarity >= lowest:
                found[(other, number)] = similarity
        for shingle in prefix:
            index[shingle].append(number)
    return found


def close_pairs(values: npt.NDArray[np.uint64], k: int) -> dict[tuple[int, int], int]:
    """Every pair within k bits, by brute force in blocks of rows (fine for a sample). `values`
    holds one 64-bit word per fingerprint, or a row of words each (128 bits: two)."""
    words = values.reshape(len(values), -1)
    found: dict[tuple[int, int], int] = {}
    for start in range(0, len(words), _ROWS_PER_STEP):
        block = words[start : start + _ROWS_PER_STEP]
        distances = np.bitwise_count(block[:, None, :] ^ words[None, :, :]).sum(axis=2, dtype=np.int64)
        for row, column in zip(*np.nonzero(distances <= k), strict=True):
            a, b = start + int(row), int(column)
            if a < b:
                found[(a, b)] = int(distances[row, column])
    return found


def band_candidates(signatures: list[UInt64Array], banding: Banding) -> set[tuple[int, int]]:
    """Every pair of signatures (by position, a < b) that shares a band key."""
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for number, values in enumerate(signatures):
        for band, key in enumerate(banding.keys(values)):
            buckets[(band, key)].append(number)
    return {(a, b) for group in buckets.values() for a, b in itertools.combinations(group, 2)}


def lsh_pairs(sketches: list[UInt64Array], threshold: float) -> set[tuple[int, int]]:
    """The pairs a new jaccard index with this threshold returns, from v2 sketches of
    DEFAULT_PERMUTATIONS (whose signatures give the bands of every threshold: a v3 index stores
    those bands' keys and the same check, so it returns the same pairs): a shared band key, and
    an estimate >= t."""
    candidates = band_candidates(sketches, choose_banding(threshold, DEFAULT_PERMUTATIONS))
    return {
        (a, b)
        for a, b in candidates
        if similarity(sketches[a], sketches[b], DEFAULT_PERMUTATIONS) >= threshold
    }


def random_sample(documents: Iterable[T], size: int, seed: int = 0) -> tuple[list[T], int]:
    """A uniform random sample of `size` of the documents (all of them if fewer), in the order
    read, and how many were read: reservoir sampling, so only the sample is held in memory."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible sample, not a secret)
    kept: list[tuple[int, T]] = []
    read = 0
    for read, document in enumerate(documents, start=1):
        if len(kept) < size:
            kept.append((read, document))
        elif (slot := rng.randrange(read)) < size:
            kept[slot] = (read, document)
    return [document for _, document in sorted(kept, key=lambda pair: pair[0])], read


def _check_enough(read: int, sampled: int, shingled: int, features: Features) -> None:
    """InputError unless two sampled documents have shingles: calibration measures pairs."""
    if read == 0:
        raise InputError(
            "no documents were read: nothing to calibrate on",
            "give text files, folders, JSONL or CSV that hold the documents",
        )
    if shingled < 2:
        has = "has" if shingled == 1 else "have"
        raise InputError(
            f"{shingled} of the {sampled} documents sampled {has} shingles under features {features}:"
            " nothing to calibrate on",
            "calibration compares pairs: give at least two documents with text",
        )


def calibrate(
    documents: Iterable[Document],
    features: Features,
    sample: int,
    threshold: float = 0.9,
    wanted_recall: float = 0.9,
    seed: int = 0,
    progress: Callable[[str], object] | None = None,
) -> Calibration:
    """Measure on a uniform random sample of `sample` documents (of all read, by `seed`);
    recommend the smallest k whose recall at Jaccard >= `threshold` reaches `wanted_recall`.
    InputError when there is nothing to calibrate on: fewer than two documents with shingles, or
    no pair of them with Jaccard >= the lowest threshold.
    `progress` is told of each step as it starts (reading, fingerprinting, the three pair searches)."""
    say = progress or (lambda line: None)
    sets: list[frozenset[int]] = []
    prints: list[int] = []
    signatures: list[UInt64Array] = []
    say("reading the documents and drawing the sample")
    chosen, read = random_sample(documents, sample, seed)
    say(f"fingerprinting {len(chosen)} sampled documents of {read} read (SimHash, MinHash, shingle sets)")
    for document in chosen:
        try:
            hashes = feature_hashes(document.text, features)
        except EmptyDocument:
            continue
        sets.append(frozenset(hashes.tolist()))
        prints.append(simhash(hashes))
        signatures.append(sketch(hashes, DEFAULT_PERMUTATIONS))
    _check_enough(read, len(chosen), len(sets), features)
    say(f"exact Jaccard: every pair of the {len(sets)} shingle sets at >= {min(THRESHOLDS)}")
    similar = similar_pairs(sets, min(THRESHOLDS))
    if not similar:
        raise InputError(
            f"no pair of the {len(sets)} documents sampled has Jaccard >= {min(THRESHOLDS)}: nothing to"
            " calibrate on",
            "give documents that include near-duplicates, or a larger --sample",
        )
    say(f"Hamming distances: every pair of fingerprints within {MAX_K} bits")
    close = close_pairs(np.array(prints, dtype=np.uint64), MAX_K)
    say("the jaccard mode's bands at each threshold")
    banded = {t: lsh_pairs(signatures, t) for t in THRESHOLDS}
    for pair in itertools.chain(close, *banded.values()):  # Jaccard below the lowest threshold too
        similar.setdefault(pair, jaccard(sets[pair[0]], sets[pair[1]]))
    result = Calibration(
        len(sets),
        str(features),
        {t: sum(j >= t for j in similar.values()) for t in THRESHOLDS},
        threshold=threshold,
        wanted_recall=wanted_recall,
        read=read,
    )
    for k in range(MAX_K + 1):
        at = [similar[pair] for pair, distance in close.items() if distance == k]
        result.meaning.append((float(np.median(at)), float(np.percentile(at, 10))) if at else None)
        within = [pair for pair, distance in close.items() if distance <= k]
        result.close.append(len(within))
        for t in THRESHOLDS:
            hits = sum(similar[pair] >= t for pair in within)
            result.precision.setdefault(t, []).append(hits / len(within) if within else 1.0)
            result.recall.setdefault(t, []).append(hits / result.similar[t] if result.similar[t] else 1.0)
    for t, found in banded.items():
        hits = sum(similar[pair] >= t for pair in found)
        result.jaccard_mode[t] = (
            hits / len(found) if found else 1.0,
            hits / result.similar[t] if result.similar[t] else 1.0,
        )
    return result
