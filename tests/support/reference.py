"""A deliberately plain, loop-by-loop reading of the SimHash specs v1 and v2 (64 and 128 bits) in
the README.

Written from the spec text, without numpy, so the vectorised implementation is checked
against the spec rather than against itself.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata

import xxhash

M64 = 2**64 - 1
K = 0x9E3779B97F4A7C15
WIDE_KEY = 0x6A09E667F3BCC908


def fmix64(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    h ^= h >> 33
    return h


def _fold(hashes: list[int], n: int, spec: int, bits: int = 64) -> int:
    """Shingle windows of n unit hashes, then the bit counters, as the spec says: every
    occurrence counts (v1), or every distinct shingle once (v2). For 128 bits, bit 64 + i counts
    bit i of fmix64(shingle XOR WIDE_KEY)."""
    size = min(n, len(hashes))
    shingles = []
    for start in range(len(hashes) - size + 1):
        acc = hashes[start]
        for j in range(1, size):
            acc = (acc * K + hashes[start + j]) & M64
        shingles.append(fmix64(acc))
    if spec == 2:
        shingles = list(set(shingles))
    counters = [0] * bits
    for shingle in shingles:
        wide = shingle | fmix64(shingle ^ WIDE_KEY) << 64
        for bit in range(bits):
            counters[bit] += 1 if (wide >> bit) & 1 else -1
    return sum(1 << bit for bit in range(bits) if counters[bit] > 0)


def reference_fingerprint(
    text: str, kind: str = "word", n: int = 3, spec: int = 2, bits: int = 64
) -> int | None:
    normal = unicodedata.normalize("NFKC", text).casefold()
    tokens = re.findall(r"\w+", normal)
    if not tokens:
        return None
    units = tokens if kind == "word" else list(" ".join(tokens))
    return _fold([xxhash.xxh3_64_intdigest(unit.encode("utf-8")) for unit in units], n, spec, bits)


def reference_bytes_fingerprint(data: bytes, n: int = 4, spec: int = 2, bits: int = 64) -> int | None:
    """bytes:N features: units are the raw bytes, each hashed as a one-byte string."""
    if not data:
        return None
    return _fold([xxhash.xxh3_64_intdigest(bytes([b])) for b in data], n, spec, bits)


def reference_minhash(shingles: set[int], permutations: int) -> list[int]:
    """MinHash spec v1, loop by loop: min over the set of fmix64(x XOR seed_i)."""
    seeds = [xxhash.xxh3_64_intdigest(i.to_bytes(4, "little")) for i in range(permutations)]
    return [min(fmix64(x ^ seed) for x in shingles) for seed in seeds]


def reference_band_keys(signature: list[int], bands: int, rows: int) -> list[int]:
    """Band j's key: XOR of its r values, value i rotated left by 17 * i mod 64 bits."""
    keys = []
    for j in range(bands):
        key = 0
        for i in range(rows):
            value, turn = signature[j * rows + i], (17 * i) % 64
            key ^= ((value << turn) | (value >> (64 - turn))) & M64
        keys.append(key)
    return keys


@functools.cache
def _probed_bins(i: int) -> tuple[int, ...]:
    """The bins an empty bin i probes, in order: the 256 probes depend on i alone, not on the
    set (computed once; a small set leaves most bins empty, and probed them a million times)."""
    probe_seed = 0x13198A2E03707344
    return tuple(fmix64(((i << 32) | attempt) ^ probe_seed) >> 52 for attempt in range(256))


def reference_check(shingles: set[int]) -> list[int]:
    """Signature spec v2's check, loop by loop: 4096 one-permutation bins, optimal densification
    (256 probes, then the next filled bin), one bit per bin, packed little-endian into 64 words."""
    check_seed, bit_seed = 0x243F6A8885A308D3, 0xA4093822299F31D0
    least: dict[int, int] = {}
    for x in shingles:
        g = fmix64(x ^ check_seed)
        b = g >> 52
        least[b] = min(least.get(b, g), g)
    filled = sorted(least)
    words = [0] * 64
    for i in range(4096):
        value = least.get(i)
        if value is None:
            value = next((least[probed] for probed in _probed_bins(i) if probed in least), None)
        if value is None:  # still empty: the next filled bin after i, circularly
            after = bisect.bisect_right(filled, i)
            value = least[filled[after % len(filled)]]
        if fmix64(value ^ bit_seed) & 1:
            words[i // 64] |= 1 << (i % 64)
    return words
