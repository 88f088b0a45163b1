"""SimHash fingerprint specs v1 and v2 (weigh each shingle's bits, fold to 64 or 128 bits),
and the one table of fingerprint spec versions and what computes each (FINGERPRINT_METHODS).

Steps 1-4 (normalise, tokenise, shingle, hash with xxh3) are simdb.sketch.features, shared with
MinHash. Spec v1 weighs each shingle by its number of occurrences; spec v2 (SimHash) counts each
distinct shingle once, so the fingerprint tracks the overlap of shingle sets (Jaccard) and a few
frequent shingles (markup, runs of zero bytes) cannot decide every bit. A 128-bit fingerprint
keeps the 64-bit one as its low half and folds a second word per shingle, fmix64(hash XOR
WIDE_KEY), into its high half. A long document is hashed a piece at a time, in memory bounded
whatever its length, with the same fingerprint. Spec v3, what `simdb create` gives a new index,
is no SimHash: the same steps 1-4, then the lowest bits of MinHash values (simdb.sketch.onebit).

Pure code (numpy, xxhash and the compiled loops of simdb.kernels.compiled; simdb.sketch.short_text
for one short text while the kernels are not loaded); docs/how-it-works.md gives the spec step by
step, tests pin it with known-answer vectors and a plain loop-by-loop reading of the spec.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdb.errors import InvalidParameter
from simdb.kernels import Shingling
from simdb.sketch import onebit, short_text
from simdb.sketch.features import (
    BYTE_HASHES,
    DEFAULT_FEATURES,
    SHINGLE_MULTIPLIER,
    WIDE_KEY,
    WORD,
    Content,
    Features,
    UInt64Array,
    byte_windows,
    check_bits,
    document_shingles,
    empty,
    sorted_out,
    without_kernels,
)

# The library's default spec: what fingerprint() computes and SimhashSpec() makes, SimHash v2. It
# stays, so that code and migrations written before keep their meaning; the CLI gives a new
# index NEW_INDEX_SPEC (SPEC_VERSIONS, at the end: all there are).
SPEC_VERSION = 2
NEW_INDEX_SPEC = 3  # one-bit MinHash: `simdb create`, `ingest --create`, `attach`, `simdb fingerprint`
SIMHASH_SPECS = (1, 2)  # the spec versions that are SimHashes (simhash() of shingle hashes)

DISTINCT_LIMIT = 1 << 23
_FIRST_SLOTS = 1 << 12  # a document's hash set starts this small and doubles as it fills

# _BIT_TABLE[v, b] is bit b of byte value v: turns per-byte value histograms into bit counts.
_BIT_TABLE = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)


def wide_bit_counts(hashes: UInt64Array, bits: int) -> npt.NDArray[np.int64]:
    """How many shingles have each of the `bits` bits set: word 0 is the shingle hash itself,
    word 1 (for 128 bits) is fmix64(hash XOR WIDE_KEY). Counted per byte value, then per bit."""
    from simdb.kernels import compiled as kernels

    histogram = kernels.byte_histogram(hashes, bits // WORD, WIDE_KEY)
    return (histogram.reshape(-1, 256) @ _BIT_TABLE).ravel()


def fold(ones: npt.NDArray[np.int64], total: int) -> int:
    """Bit i is 1 exactly when more than half of the `total` occurrences have it set (any width
    that is a multiple of 8 bits)."""
    return int.from_bytes(np.packbits(2 * ones > total, bitorder="little").tobytes(), "little")


Counts = tuple[npt.NDArray[np.int64], int]  # step 5's counters: shingles with each bit set, of how many


def _counted(pieces: Iterable[UInt64Array], bits: int) -> Counts:
    """Step 5's counters of the hashes in these pieces: every shingle occurrence (spec v1, which
    weighs a distinct shingle by its occurrences), or every distinct shingle once (spec v2:
    distinct_ranges), adds +1 where its hash has a 1 and -1 where it has a 0."""
    ones = np.zeros(bits, dtype=np.int64)
    total = 0
    for hashes in pieces:
        ones += wide_bit_counts(hashes, bits)
        total += len(hashes)
    return ones, total


def distinct_ranges(
    pieces: Callable[[], Iterable[npt.NDArray[Any]]], limit: int | None = None, n: int = 0
) -> Iterator[UInt64Array]:
    """The distinct values of all the pieces, at most `limit` (DISTINCT_LIMIT) at a time. With
    `n`, the pieces are bytes (each beginning with the last n - 1 of the one before, overlapping)
    and the values the hashes of their n-grams (bytes features), computed where they are collected.

    One pass over the pieces collects them in a hash set. If it would hold more than `limit`,
    it keeps only the values whose top bit is 0, then (if still too many) top two bits 00, and
    so on: the values whose top d bits are 0. The next pass collects those whose top d bits
    are 1, and so on up to 2^d - 1 (going deeper again where a range holds too many), so that
    every distinct value comes in exactly one range. Hash values are uniform, so a document
    with D distinct values takes between D / limit and 2D / limit passes; one where D <= limit
    (and a range that held few values is followed by a wider one: _next_range).
    Each array yielded is valid until the next is asked for.
    """
    from simdb.kernels import compiled as kernels

    limit = DISTINCT_LIMIT if limit is None else limit
    largest = 1 << (2 * limit - 1).bit_length()  # slots: a power of 2, at least twice the limit
    table = np.zeros(min(_FIRST_SLOTS, largest), dtype=np.uint64)
    prefix, depth = 0, 0
    while True:
        held, zero = 0, False
        for values in pieces():
            state = (table, held, zero, np.uint64(prefix), depth)
            if n:  # fewer than n bytes in all: one shingle of them all
                size = min(n, len(values))
                state = kernels.collect_bytes(
                    values, BYTE_HASHES, size, SHINGLE_MULTIPLIER, state, limit, largest
                )
            else:
                state = kernels.collect(values, state, limit, largest)
            table, held, zero, found, depth = state
            prefix = int(found)
        count = kernels.drain(table)
        yield table[: count + int(zero)]  # after the values, table[count] is 0: the value 0, if held
        table[: count + 1] = 0
        prefix, depth = _next_range(prefix, depth, held, limit)
        if prefix == 1 << depth:  # past the last range
            return


def _next_range(prefix: int, depth: int, held: int, limit: int) -> tuple[int, int]:
    """The range after the one of `prefix` at `depth`, which held `held` values: the next at the
    same depth, or where that begins a range of twice the size (an even prefix) and the last
    held at most a quarter of the limit, that range (and so on): hash values are uniform, but a
    caller's values may not be, and a range past them all then takes one pass, not billions."""
    prefix += 1
    while depth > 0 and prefix % 2 == 0 and 4 * held <= limit:
        prefix, depth, held = prefix // 2, depth - 1, 2 * held
    return prefix, depth


def _counts(content: Content, features: Features, distinct: bool, bits: int) -> Counts:
    """Step 5's counters of a document, a piece at a time: of every shingle occurrence (spec v1),
    or of each `distinct` shingle once (spec v2)."""
    if not distinct:
        return _counted(document_shingles(content, features)(), bits)
    if features.binary:  # the byte n-grams' hashes computed as they are collected
        n = features.n
        return _counted(distinct_ranges(lambda: byte_windows(content, n), n=n), bits)
    return _counted(distinct_ranges(document_shingles(content, features)), bits)


def check_spec(spec: int) -> int:
    """`spec` if this simdb computes fingerprints of that spec version, else InvalidParameter."""
    if spec not in SPEC_VERSIONS:
        raise InvalidParameter(
            f"unknown fingerprint spec {spec}", f"use one of {', '.join(map(str, SPEC_VERSIONS))}"
        )
    return spec


def simhash(hashes: UInt64Array, spec: int = SPEC_VERSION, bits: int = 64) -> int:
    """Step 5: the `bits`-bit SimHash of a document's shingle hashes, under fingerprint spec `spec`
    (v1 or v2; spec v3 of shingle hashes is onebit.onebit)."""
    if check_spec(spec) not in SIMHASH_SPECS:
        raise InvalidParameter(
            f"fingerprint spec {spec} is not a SimHash",
            "use spec 1 or 2 here; a one-bit MinHash (spec 3) of shingle hashes is "
            "simdb.sketch.onebit.onebit",
        )
    pieces = [hashes] if spec == 1 else distinct_ranges(lambda: [hashes])
    return fold(*_counted(pieces, check_bits(bits)))


def fingerprint_bytes(data: bytes, n: int = 4, spec: int = SPEC_VERSION, bits: int = 64) -> int:
    """The fingerprint of raw content with bytes:N features (byte n-grams), for any file, text or not.

    Units are the bytes; unit hash = xxh3_64 of the single byte; shingles and the fold are as
    for text. Hashed a piece at a time, like any long document (see PIECE).
    """
    return fingerprint(data, Features("bytes", n), spec, bits)


def fingerprint(
    content: Content, features: Features = DEFAULT_FEATURES, spec: int = SPEC_VERSION, bits: int = 64
) -> int:
    """The unsigned `bits`-bit fingerprint (64 or 128) of a document under fingerprint spec `spec`;
    raises EmptyDocument if it has no shingles. The default is v2, SimHash, as before (a column an
    application fills keeps its spec); `simdb create` makes v3 indexes, one-bit MinHash: pass
    spec=3 for theirs, or let the index compute it (index.sketch).

    Text goes through the features; raw bytes (a file read for bytes:N) need bytes features,
    and bytes features take text as its UTF-8 bytes.
    """
    found = fingerprints([content], features, spec, bits)[0]
    if found is None:
        raise empty(features)
    return found


BitCounts = Callable[
    [list[bytes], Shingling, bool, int, np.uint64],
    tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
]  # kernels.bit_counts and short_text.bit_counts


def _bit_counts(texts: list[bytes]) -> BitCounts:
    """Where step 3-5's counters come from: the compiled kernels, or numpy (without_kernels)."""
    if without_kernels(texts):
        return short_text.bit_counts
    from simdb.kernels import compiled as kernels

    return kernels.bit_counts


def fingerprints(
    contents: Sequence[Content],
    features: Features = DEFAULT_FEATURES,
    spec: int = SPEC_VERSION,
    bits: int = 64,
) -> list[int | None]:
    """fingerprint() of each document, None where it has no shingles: the fingerprinter of
    `spec` (FINGERPRINT_METHODS), which every path that fingerprints a document goes through."""
    return FINGERPRINT_METHODS[check_spec(spec)].compute(contents, features, check_bits(bits))


def _simhashes(
    contents: Sequence[Content], features: Features, bits: int, *, distinct: bool
) -> list[int | None]:
    """SimHash specs v1 (every shingle occurrence) and v2 (`distinct`: each distinct shingle once).

    Text features take one compiled call for all the documents (steps 3-5), which runs outside
    the GIL: threads that each fingerprint a part of a batch use every core. Bytes features,
    long texts and streams are hashed a piece at a time (the same fingerprints, in bounded memory).
    """

    def alone(content: Content) -> int | None:
        ones, total = _counts(content, features, distinct, bits)
        return fold(ones, total) if total else None

    found, whole, texts = sorted_out(contents, features, alone)
    if not whole:
        return found
    ones, totals = _bit_counts(texts)(texts, features.shingling, distinct, bits // WORD, WIDE_KEY)
    majority = np.packbits(2 * ones > totals[:, None], axis=1, bitorder="little")  # step 5, row by row
    for at, row, total in zip(whole, majority, totals, strict=True):
        found[at] = int.from_bytes(row.tobytes(), "little") if total else None
    return found


Fingerprinter = Callable[[Sequence[Content], Features, int], list[int | None]]


def _simhash_difference(jaccard: float) -> float:
    """A SimHash bit differs with probability angle / pi; of two sets of equal size at Jaccard J,
    each shingle weighing 1, the cosine is 2J / (1 + J)."""
    return math.acos(min(1.0, 2 * jaccard / (1 + jaccard))) / math.pi


def _onebit_difference(jaccard: float) -> float:
    """A one-bit MinHash bit differs with probability (1 - J) / 2 (simdb.sketch.onebit)."""
    return (1 - jaccard) / 2


@dataclass(frozen=True)
class FingerprintMethod:
    """One fingerprint spec version: its name, what computes it (documents, features, bits), the k
    a new index of it searches by default, and the chance that a bit of two documents'
    fingerprints differs at a Jaccard similarity J of their shingles (what simdb.plan.reach reads)."""

    name: str
    compute: Fingerprinter
    max_distance: int
    bit_difference: Callable[[float], float]


# Fingerprint spec version -> what it is. A new spec is an entry here; the catalog records an
# index's version and every path fingerprints through this. SimHash at k = 3 finds close copies
# (a changed word in documents over ~10 KB); one-bit MinHash moves a third as many bits for an
# edit and searches within 5, so it finds a changed line in documents over ~2 KB (docs/performance.md,
# "Single edits": the figures behind the choice).
FINGERPRINT_METHODS: dict[int, FingerprintMethod] = {
    1: FingerprintMethod("SimHash v1", functools.partial(_simhashes, distinct=False), 3, _simhash_difference),
    2: FingerprintMethod("SimHash", functools.partial(_simhashes, distinct=True), 3, _simhash_difference),
    3: FingerprintMethod("one-bit MinHash", onebit.fingerprints, 5, _onebit_difference),
}
SPEC_VERSIONS = tuple(FINGERPRINT_METHODS)
DEFAULT_MAX_DISTANCE = FINGERPRINT_METHODS[NEW_INDEX_SPEC].max_distance  # the k of `simdb create`
