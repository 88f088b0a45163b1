"""Step 3-5 counters of one short text in numpy and the xxhash package, without the compiled kernels.

A command that fingerprints a single query (`simdb query NAME --text ...`, `simdb fingerprint`)
would otherwise load numba and the kernels' machine code, about 0.3 s, for a few microseconds of
work; on an install whose kernels were never compiled it would wait for the compile. bit_counts
takes the arguments of kernels.bit_counts and returns the same values (tests/unit/test_short_text.py
compares them); simhash.fingerprints calls it for one text of at most LIMIT bytes while the
kernels are not loaded.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xxhash

from simdb import kernels
from simdb.kernels import Shingling

LIMIT = 4096  # bytes of unit text: past that the kernels' loop beats a Python call per token

FMIX_C1 = np.uint64(kernels.FMIX_C1)  # MurmurHash3's 64-bit finaliser, fmix64
FMIX_C2 = np.uint64(kernels.FMIX_C2)
_SPACE = b" "
_SHIFTS = np.arange(64, dtype=np.uint64)

UInt64Array = npt.NDArray[np.uint64]


def fmix64(values: UInt64Array) -> UInt64Array:
    """fmix64 of each value (uint64 arithmetic wraps)."""
    h = values ^ (values >> np.uint64(33))
    h = h * FMIX_C1
    h ^= h >> np.uint64(33)
    h = h * FMIX_C2
    mixed: UInt64Array = h ^ (h >> np.uint64(33))
    return mixed


def _units(text: bytes, chars: bool, mapping: bytes) -> UInt64Array:
    """xxh3_64 of each character's UTF-8 bytes, or of each token of the mapped text (runs of
    bytes other than spaces), as kernels.char_units and kernels.word_units give them."""
    if chars:
        pieces = [character.encode("utf-8") for character in text.decode("utf-8")]
    else:
        pieces = [token for token in text.translate(mapping).split(_SPACE) if token]
    return np.array([xxhash.xxh3_64_intdigest(piece) for piece in pieces], dtype=np.uint64)


def _shingles(units: UInt64Array, n: int, multiplier: np.uint64) -> UInt64Array:
    """kernels.shingles: fmix64 of acc = acc * multiplier + unit over each window of n units."""
    size = min(n, len(units))
    windows = len(units) - size + 1
    acc = units[:windows].copy()
    for offset in range(1, size):
        acc = acc * multiplier + units[offset : offset + windows]
    return fmix64(acc)


def shingles(text: bytes, shingling: Shingling) -> UInt64Array:
    """The shingle hashes of one unit text, as kernels.shingles gives them from its units (none
    for a text without units): what one-bit MinHash (simdb.sketch.onebit) takes the minima of."""
    chars, mapping, n, multiplier = shingling
    units = _units(text, chars, mapping)
    return _shingles(units, n, multiplier) if len(units) else units


def bit_counts(
    texts: list[bytes], shingling: Shingling, distinct_only: bool, words: int, wide_key: np.uint64
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """kernels.bit_counts, one text at a time: per text, how many of its shingles have each of
    the 64 * `words` bits set, and how many shingles it has (0: none)."""
    ones = np.zeros((len(texts), 64 * words), dtype=np.int64)
    totals = np.zeros(len(texts), dtype=np.int64)
    for row, text in enumerate(texts):
        hashes = shingles(text, shingling)
        if len(hashes) == 0:
            continue
        if distinct_only:
            hashes = np.array(list(set(hashes.tolist())), dtype=np.uint64)  # (np.unique loads numpy.ma)
        totals[row] = len(hashes)
        for word, values in enumerate([hashes, fmix64(hashes ^ wide_key)][:words]):
            ones[row, 64 * word : 64 * word + 64] = ((values[:, None] >> _SHIFTS) & np.uint64(1)).sum(axis=0)
    return ones, totals
