"""The fingerprint and signature code as it was before simdb.kernels.compiled (numpy only, a Python call
per token), kept runnable so that `simdb bench --text` measures the kernels against it in the
same run. Same specs, same values: tests/unit/test_kernels.py checks that both agree.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.sketch.features import ASCII_WORDS, SHINGLE_MULTIPLIER, TOKEN_PATTERN, EmptyDocument, normalize
from simdb.sketch.minhash import _BIT_SEED, _CHECK_SEED, _MAX_PROBES, _PROBE_SEED, CHECK_BINS, seeds
from simdb.sketch.short_text import fmix64
from simdb.sketch.simhash import _BIT_TABLE, fold

UInt64Array = npt.NDArray[np.uint64]
_BYTE_OFFSETS = (np.arange(8, dtype=np.uint16) * 256)[None, :]
_BIN_SHIFT = np.uint64(64 - 12)
_PROBES_PER_STEP = 32
_CHUNK = 4096


def tokens(text: str) -> list[bytes]:
    """Step 2 as a list of tokens: the whole text normalised, each piece looked at in Python."""
    if text.isascii():
        return text.encode("ascii").translate(ASCII_WORDS).split()
    pieces = normalize(text).encode("utf-8").translate(ASCII_WORDS).split()
    if all(piece.isascii() for piece in pieces):
        return pieces
    words: list[bytes] = []
    for piece in pieces:
        if piece.isascii():
            words.append(piece)
        else:
            words.extend(word.encode("utf-8") for word in TOKEN_PATTERN.findall(piece.decode("utf-8")))
    return words


def word_shingles(text: str, n: int = 3) -> UInt64Array:
    """Steps 1-4 for word features: xxh3_64 through a Python call per token, windows in numpy."""
    words = tokens(text)
    if not words:
        raise EmptyDocument("the document has no word characters")
    units = np.fromiter(map(xxhash.xxh3_64_intdigest, words), dtype=np.uint64, count=len(words))
    size = min(n, len(units))
    count = len(units) - size + 1
    acc = units[0:count].copy()
    for j in range(1, size):
        acc = acc * SHINGLE_MULTIPLIER + units[j : j + count]
    return fmix64(acc)


def _bit_counts(hashes: UInt64Array) -> npt.NDArray[np.int64]:
    as_bytes = hashes.astype("<u8", copy=False).view(np.uint8).reshape(-1, 8)
    histogram = np.bincount((as_bytes + _BYTE_OFFSETS).ravel(), minlength=8 * 256)
    return (histogram.reshape(8, 256) @ _BIT_TABLE).ravel()


def fingerprint(text: str, n: int = 3, spec: int = 2) -> int:
    """A 64-bit fingerprint of word n-grams: every occurrence counted (v1) or np.unique first (v2)."""
    hashes = word_shingles(text, n)
    if spec == 2:
        hashes = np.unique(hashes)
    return fold(_bit_counts(hashes), len(hashes))


def _signature(shingles: UInt64Array, permutations: int) -> UInt64Array:
    values = np.unique(shingles)
    mixers = seeds(permutations)[:, None]
    result = np.full(permutations, np.iinfo(np.uint64).max, dtype=np.uint64)
    for start in range(0, len(values), _CHUNK):
        chunk = values[None, start : start + _CHUNK]
        result = np.minimum(result, fmix64(chunk ^ mixers).min(axis=1))
    return result


@functools.cache
def _probes(first: int) -> npt.NDArray[np.int64]:
    bins = np.arange(CHECK_BINS, dtype=np.uint64)[:, None] << np.uint64(32)
    tries = np.arange(first, first + _PROBES_PER_STEP, dtype=np.uint64)[None, :]
    return (fmix64((bins | tries) ^ _PROBE_SEED) >> _BIN_SHIFT).astype(np.int64)


def _check_words(shingles: UInt64Array) -> UInt64Array:
    mixed = np.sort(fmix64(np.unique(shingles) ^ _CHECK_SEED))
    filled, first = np.unique((mixed >> _BIN_SHIFT).astype(np.int64), return_index=True)
    values = np.zeros(CHECK_BINS, dtype=np.uint64)
    values[filled] = mixed[first]
    full = np.zeros(CHECK_BINS, dtype=bool)
    full[filled] = True
    pending = np.flatnonzero(~full)
    for attempt in range(0, _MAX_PROBES, _PROBES_PER_STEP):
        probes = _probes(attempt)[pending]
        hit = full[probes]
        found = hit.any(axis=1)
        values[pending[found]] = values[probes[found, hit[found].argmax(axis=1)]]
        pending = pending[~found]
    values[pending] = values[filled[np.searchsorted(filled, pending) % len(filled)]]
    bits = (fmix64(values ^ _BIT_SEED) & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)


def signature(text: str, permutations: int = 128, n: int = 3) -> UInt64Array:
    """A jaccard index's sketch under signature spec v2: the MinHash signature, then the check."""
    hashes = word_shingles(text, n)
    return np.concatenate([_signature(hashes, permutations), _check_words(hashes)])
