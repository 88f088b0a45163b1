"""One-bit MinHash fingerprint, spec v1: a 64-bit fingerprint for Hamming search whose bits are
the lowest bits of 64 MinHash values (b-bit minwise hashing with b = 1, Li and König 2010).

Pure code (numpy, xxhash and the jaccard mode's compiled minima, simdb.sketch.minhash). It is fingerprint
spec v3 of the simhash mode (`simdb create NAME --fingerprint-spec 3`): simhash.fingerprints
dispatches spec 3 to fingerprints() here, whose 64 bits are seed 0's and whose 128 bits are
seeds 0 and 1's side by side (bit i from MinHash value i, i = 0..127).

Spec v1, for a document and a seed s (0 <= s < MAX_SEED):

1. Features: the set of distinct shingle hashes of the document, steps 1-4 of the SimHash spec
   (the same shingles as SimHash and the jaccard mode's MinHash; repeats do not count).
2. Permutations: for j = 0..63, p = 64 * s + j and seed_p = xxh3_64(p as 4 little-endian bytes),
   the MinHash spec's permutation p; m_j = the least fmix64(x XOR seed_p) over the set.
3. Bit j of the fingerprint (the value 1 << j) is the lowest bit of m_j; the fingerprint is the
   unsigned 64-bit sum of them.

With s = 0 the fingerprint is the lowest bits of the first 64 values of the document's MinHash
signature; with seed s, of values 64s..64s+63 of a signature of 64(s + 1) permutations. Two
sets with Jaccard similarity J have equal minima at a position with probability J, and
otherwise (fmix64 being well mixed) equal lowest bits half the time: a bit differs with
probability about (1 - J) / 2, and the Hamming distance of two fingerprints is about
Binomial(64, (1 - J) / 2), 32 (1 - J) bits on average. A SimHash bit differs with probability
angle / pi, two to three times as often near J = 0.95.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

import numpy as np
import xxhash

from simdb.errors import InvalidParameter
from simdb.sketch import short_text
from simdb.sketch.features import (
    DEFAULT_FEATURES,
    WIDTHS,
    Content,
    EmptyDocument,
    Features,
    UInt64Array,
    check_bits,
    document_shingles,
    empty,
    in_pieces,
    unit_text,
    without_kernels,
)
from simdb.sketch.minhash import document_signatures
from simdb.sketch.short_text import fmix64

ONEBIT_SPEC_VERSION = 1
BITS = 64
MAX_SEED = 1 << 26  # 64 * (s + 1) permutation numbers must fit in 4 bytes
_ROWS = 4096  # shingles mixed at once: a 4096 x 64 block of uint64 (2 MiB) bounds the memory


def check_seed(seed: int) -> int:
    """`seed` if it is a seed of spec v1 (0 <= seed < MAX_SEED), else InvalidParameter."""
    if not 0 <= seed < MAX_SEED:
        raise InvalidParameter(f"one-bit MinHash seed {seed} is out of range", f"use 0 to {MAX_SEED - 1}")
    return seed


@functools.cache
def permutation_seeds(seed: int = 0) -> UInt64Array:
    """Step 2's seed_p for p = 64 * seed + j, j = 0..63 (read-only, made once per seed)."""
    first = BITS * check_seed(seed)
    values = np.array(
        [xxhash.xxh3_64_intdigest((first + j).to_bytes(4, "little")) for j in range(BITS)], dtype=np.uint64
    )
    values.flags.writeable = False
    return values


def minima(pieces: Iterable[UInt64Array], seed: int = 0) -> UInt64Array | None:
    """Step 2: the 64 MinHash values m_j of all the pieces' shingle hashes (None: no shingles).
    A minimum over the set is the least of the pieces' minima, so pieces may repeat values."""
    seeds = permutation_seeds(seed)
    least: UInt64Array | None = None
    for piece in pieces:
        distinct = np.unique(np.asarray(piece, dtype=np.uint64))
        for start in range(0, len(distinct), _ROWS):
            block = distinct[start : start + _ROWS]
            found: UInt64Array = fmix64(block[:, None] ^ seeds[None, :]).min(axis=0)
            least = found if least is None else np.minimum(least, found)
    return least


def from_minima(values: UInt64Array) -> int:
    """Step 3: the fingerprint whose bit j is the lowest bit of values[j] (64 values, or 128 for
    fingerprint spec v3's 128 bits)."""
    if len(values) not in WIDTHS:
        raise InvalidParameter(
            f"{len(values)} MinHash values given", f"give {' or '.join(map(str, WIDTHS))}, one per bit"
        )
    lowest = (np.asarray(values, dtype=np.uint64) & np.uint64(1)).astype(np.uint8)
    return int.from_bytes(np.packbits(lowest, bitorder="little").tobytes(), "little")


def onebit(shingles: UInt64Array, seed: int = 0) -> int:
    """The one-bit MinHash fingerprint of a set of shingle hashes (duplicates do not matter)."""
    values = minima([shingles], seed)
    if values is None:
        raise EmptyDocument("the document has no shingles")
    return from_minima(values)


def onebit_fingerprint(content: Content, features: Features = DEFAULT_FEATURES, seed: int = 0) -> int:
    """The unsigned 64-bit one-bit MinHash fingerprint (spec v1) of a document with seed `seed`;
    raises EmptyDocument if it has no shingles. Text goes through the features; raw bytes need
    bytes features, which take text as its UTF-8 bytes. Hashed a piece at a time, like SimHash."""
    values = minima(document_shingles(content, features)(), seed)
    if values is None:
        raise empty(features)
    return from_minima(values)


def fingerprints(
    contents: Sequence[Content], features: Features = DEFAULT_FEATURES, bits: int = BITS
) -> list[int | None]:
    """Fingerprint spec v3 of the simhash mode, for each document (None: no shingles): bit i is
    the lowest bit of MinHash value i, i = 0..bits-1 (64: seed 0's fingerprint; 128: seed 0's,
    then seed 1's in the high half). The minima are the jaccard mode's plain signature (signature
    spec v1), so a batch of short texts takes one compiled call and a long one goes in pieces;
    a query's one short text is hashed in numpy, without loading the kernels (_one_short_text)."""
    check_bits(bits)
    alone = _one_short_text(contents, features)
    if alone is not None:
        return [in_numpy(alone, features, bits)]
    found = document_signatures(contents, features, bits, spec=1)
    return [None if values is None else from_minima(values) for values in found]


def _one_short_text(contents: Sequence[Content], features: Features) -> bytes | None:
    """The unit text of the only document, if features.without_kernels would hash it in numpy."""
    if len(contents) != 1 or not isinstance(contents[0], str) or in_pieces(contents[0], features):
        return None
    text = unit_text(contents[0], features)
    return text if without_kernels([text]) else None


def in_numpy(text: bytes, features: Features, bits: int = BITS) -> int | None:
    """fingerprints() of one unit text (features.unit_text) in numpy and the xxhash package, with
    the shingles of simdb.sketch.short_text: the same value, without loading the compiled kernels."""
    hashes = short_text.shingles(text, features.shingling)
    seeds = [minima([hashes], seed) for seed in range(check_bits(bits) // BITS)]
    least = [values for values in seeds if values is not None]  # all, or none: no shingles
    return from_minima(np.concatenate(least)) if least else None
