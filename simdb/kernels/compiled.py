"""Compiled loops (numba) behind the fingerprint and signature specs and all pairs: what numpy
cannot do without a Python call per token, a sort per document or a pass per candidate pair.

- xxh3_64 of byte ranges (XXH3's published algorithm with its default secret and seed 0, the
  same values as the xxhash package's xxh3_64_intdigest), so tokens are hashed inside one loop;
- the unit hashes of a document's tokens (word features) or characters (char features);
- shingle windows, the distinct values of an array (a hash set instead of a sort), byte
  histograms of hashes (bit counting without numpy's bincount over a copy of every byte);
- a hash set of bounded size that collects one range of hash values at a time (spec v2's
  distinct shingles of a document of any length);
- MinHash minima over the permutations, and signature spec v2's check;
- all pairs of fingerprints within k bits: a radix sort of each table's prefixes, and the runs
  of equal prefixes compared pair by pair; the pairs of a few fresh rows, each row's prefix
  looked up among theirs (simdb.plan.pairing); rows found by address (simdb.index.rowscan).

Pure code over numpy arrays: simhash.py, minhash.py and pairing.py call it and keep their specs;
the plain references in the tests (brute force, for pairs) judge both. Compiled on first use and
cached beside this file (or in numba's per-user cache where that is not writable; NUMBA_CACHE_DIR
moves it), so a later process only loads the machine code. A compile says so on stderr before it
starts (COMPILING), once per process, and then compiles all of them; `simdb init` and `python -m
simdb.warmup` compile them up front (simdb.warmup).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt
from numba.core import event

from simdb import kernels
from simdb.kernels import Shingling

F = TypeVar("F", bound=Callable[..., Any])
UInt64Array = npt.NDArray[np.uint64]
UInt8Array = npt.NDArray[np.uint8]


COMPILING = "simdb: compiling its kernels, once per install (10 to 30 s)..."


class _FirstCompile(event.Listener):
    """Says on stderr, once per process, that numba is compiling one of these kernels (its disk
    cache had none for the call), so that the pause that follows is not a silent one, and
    compiles all the others meanwhile (simdb.warmup, in a thread the process waits for), so that
    it is said once per install: not again by the next command that needs another kernel (an
    ingest, then pairs). A kernel loaded from the cache fires no such event: a warm install
    prints nothing."""

    said = False

    def on_start(self, ev: event.Event) -> None:
        function = getattr(ev.data["dispatcher"], "py_func", None)
        if not self.said and getattr(function, "__module__", None) == __name__:
            self.said = True
            print(COMPILING, file=sys.stderr, flush=True)
            threading.Thread(target=_compile_the_rest, name="simdb-compile-kernels").start()

    def on_end(self, ev: event.Event) -> None:
        pass


def _compile_the_rest() -> None:
    """Every kernel, compiled where the cache has none, by the hooks that know how to call them
    (simdb.warmup registers one; numba's compiler lock keeps it one at a time with the caller's
    own compile)."""
    for hook in kernels.AFTER_FIRST_COMPILE:
        hook()


event.register("numba:compile", _FirstCompile())  # type: ignore[no-untyped-call]  # (numba: no hints)


def _compiled(function: F) -> F:
    """numba's nopython compilation, cached on disk; typed as the function it wraps."""
    return cast(F, numba.njit(cache=True, nogil=True)(function))


def _inline(function: F) -> F:
    """A helper compiled into its callers."""
    return cast(F, numba.njit(inline="always", cache=True)(function))


# XXH3's default secret (192 bytes) and constants, as published with xxHash.
_SECRET = np.frombuffer(
    bytes.fromhex(
        "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
        "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
        "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
        "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
        "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
        "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
    ),
    dtype=np.uint8,
)
FMIX_C1 = np.uint64(kernels.FMIX_C1)  # MurmurHash3's 64-bit finaliser, fmix64
FMIX_C2 = np.uint64(kernels.FMIX_C2)
_P32_1 = np.uint64(0x9E3779B1)
_P32_2 = np.uint64(0x85EBCA77)
_P32_3 = np.uint64(0xC2B2AE3D)
_P64_1 = np.uint64(0x9E3779B185EBCA87)
_P64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P64_3 = np.uint64(0x165667B19E3779F9)
_P64_4 = np.uint64(0x85EBCA77C2B2AE63)
_P64_5 = np.uint64(0x27D4EB2F165667C5)
_MX1 = np.uint64(0x165667919E3779F9)
_MX2 = np.uint64(0x9FB21C651E98DF25)
_LOW32 = np.uint64(0xFFFFFFFF)
_SPACE = 32


@_inline
def _read(data: UInt8Array, at: int, size: int) -> np.uint64:
    """The little-endian number in data[at : at + size] (size 4 or 8)."""
    value = np.uint64(0)
    for byte in range(size):
        value |= np.uint64(data[at + byte]) << np.uint64(8 * byte)
    return value


@_inline
def _rotl(value: np.uint64, bits: int) -> np.uint64:
    return (value << np.uint64(bits)) | (value >> np.uint64(64 - bits))


@_inline
def _swap64(value: np.uint64) -> np.uint64:
    swapped = np.uint64(0)
    for byte in range(8):
        swapped = (swapped << np.uint64(8)) | ((value >> np.uint64(8 * byte)) & np.uint64(0xFF))
    return swapped


@_inline
def _mul128_fold64(a: np.uint64, b: np.uint64) -> np.uint64:
    """The 128-bit product of a and b, its two halves XORed (from four 32-bit products)."""
    a_lo, a_hi = a & _LOW32, a >> np.uint64(32)
    b_lo, b_hi = b & _LOW32, b >> np.uint64(32)
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> np.uint64(32)) + (hi_lo & _LOW32) + lo_hi
    upper = (hi_lo >> np.uint64(32)) + (cross >> np.uint64(32)) + hi_hi
    lower = (cross << np.uint64(32)) | (lo_lo & _LOW32)
    return lower ^ upper


@_inline
def _avalanche(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(37)
    h *= _MX1
    return h ^ (h >> np.uint64(32))


@_inline
def _xorshift_multiply(
    h: np.uint64, first: int, times: np.uint64, second: int, again: np.uint64, last: int
) -> np.uint64:
    """The finaliser shape of XXH64 and fmix64: xor-shift, multiply, xor-shift, multiply, xor-shift."""
    h ^= h >> np.uint64(first)
    h *= times
    h ^= h >> np.uint64(second)
    h *= again
    return h ^ (h >> np.uint64(last))


@_inline
def _xxh64_avalanche(h: np.uint64) -> np.uint64:
    return _xorshift_multiply(h, 33, _P64_2, 29, _P64_3, 32)


@_inline
def _mix16(data: UInt8Array, at: int, secret: UInt8Array, key_at: int) -> np.uint64:
    return _mul128_fold64(
        _read(data, at, 8) ^ _read(secret, key_at, 8), _read(data, at + 8, 8) ^ _read(secret, key_at + 8, 8)
    )


@_inline
def _accumulate_512(acc: UInt64Array, data: UInt8Array, at: int, secret: UInt8Array, key_at: int) -> None:
    for lane in range(8):
        value = _read(data, at + 8 * lane, 8)
        keyed = value ^ _read(secret, key_at + 8 * lane, 8)
        acc[lane ^ 1] += value
        acc[lane] += (keyed & _LOW32) * (keyed >> np.uint64(32))


@_inline
def _scramble(acc: UInt64Array, secret: UInt8Array, key_at: int) -> None:
    for lane in range(8):
        value = acc[lane]
        value ^= value >> np.uint64(47)
        value ^= _read(secret, key_at + 8 * lane, 8)
        acc[lane] = value * _P32_1


@_compiled
def _xxh3_long(data: UInt8Array, start: int, length: int, secret: UInt8Array) -> np.uint64:
    """XXH3-64 of more than 240 bytes: 64-byte stripes into eight accumulators, scrambled per block."""
    acc = np.empty(8, dtype=np.uint64)
    acc[0], acc[1], acc[2], acc[3] = _P32_3, _P64_1, _P64_2, _P64_3
    acc[4], acc[5], acc[6], acc[7] = _P64_4, _P32_2, _P64_5, _P32_1
    stripes_per_block = (len(secret) - 64) // 8
    block = 64 * stripes_per_block
    blocks = (length - 1) // block
    for number in range(blocks):
        for stripe in range(stripes_per_block):
            _accumulate_512(acc, data, start + number * block + stripe * 64, secret, stripe * 8)
        _scramble(acc, secret, len(secret) - 64)
    stripes = ((length - 1) - block * blocks) // 64
    for stripe in range(stripes):
        _accumulate_512(acc, data, start + blocks * block + stripe * 64, secret, stripe * 8)
    _accumulate_512(acc, data, start + length - 64, secret, len(secret) - 64 - 7)
    result = np.uint64(length) * _P64_1
    for pair in range(4):
        key_at = 11 + 16 * pair
        result += _mul128_fold64(
            acc[2 * pair] ^ _read(secret, key_at, 8), acc[2 * pair + 1] ^ _read(secret, key_at + 8, 8)
        )
    return _avalanche(result)


@_compiled
def _xxh3_over_16(data: UInt8Array, start: int, length: int, secret: UInt8Array) -> np.uint64:
    """XXH3-64 of 17 bytes or more: 16-byte pairs mixed with the secret (up to 240), else stripes."""
    if length > 240:
        return _xxh3_long(data, start, length, secret)
    acc = np.uint64(length) * _P64_1
    if length > 128:
        for round_ in range(8):
            acc += _mix16(data, start + 16 * round_, secret, 16 * round_)
        acc = _avalanche(acc)
        for round_ in range(8, length // 16):
            acc += _mix16(data, start + 16 * round_, secret, 16 * (round_ - 8) + 3)
        acc += _mix16(data, start + length - 16, secret, 136 - 17)
        return _avalanche(acc)
    if length > 32:
        if length > 64:
            if length > 96:
                acc += _mix16(data, start + 48, secret, 96)
                acc += _mix16(data, start + length - 64, secret, 112)
            acc += _mix16(data, start + 32, secret, 64)
            acc += _mix16(data, start + length - 48, secret, 80)
        acc += _mix16(data, start + 16, secret, 32)
        acc += _mix16(data, start + length - 32, secret, 48)
    acc += _mix16(data, start, secret, 0)
    acc += _mix16(data, start + length - 16, secret, 16)
    return _avalanche(acc)


@_inline
def _xxh3_short(data: UInt8Array, start: int, length: int, secret: UInt8Array) -> np.uint64:
    """XXH3-64 (seed 0) of data[start : start + length] for at most 16 bytes (most tokens),
    compiled into each caller. Callers branch to _xxh3_over_16 themselves: a call inside this
    function, even one not taken, made the token loop five times slower."""
    if length > 8:
        low = _read(data, start, 8) ^ (_read(secret, 24, 8) ^ _read(secret, 32, 8))
        high = _read(data, start + length - 8, 8) ^ (_read(secret, 40, 8) ^ _read(secret, 48, 8))
        acc = np.uint64(length) + _swap64(low) + high + _mul128_fold64(low, high)
        return _avalanche(acc)
    if length >= 4:
        first, last = _read(data, start, 4), _read(data, start + length - 4, 4)
        h = (last + (first << np.uint64(32))) ^ (_read(secret, 8, 8) ^ _read(secret, 16, 8))
        h ^= _rotl(h, 49) ^ _rotl(h, 24)
        h *= _MX2
        h ^= (h >> np.uint64(35)) + np.uint64(length)
        h *= _MX2
        return h ^ (h >> np.uint64(28))
    if length > 0:
        combined = (
            (np.uint64(data[start]) << np.uint64(16))
            | (np.uint64(data[start + (length >> 1)]) << np.uint64(24))
            | np.uint64(data[start + length - 1])
            | (np.uint64(length) << np.uint64(8))
        )
        return _xxh64_avalanche(combined ^ (_read(secret, 0, 4) ^ _read(secret, 4, 4)))
    return _xxh64_avalanche(_read(secret, 56, 8) ^ _read(secret, 64, 8))


@_compiled
def _xxh3_whole(data: UInt8Array, secret: UInt8Array) -> np.uint64:
    if len(data) > 16:
        return _xxh3_over_16(data, 0, len(data), secret)
    return _xxh3_short(data, 0, len(data), secret)


def xxh3_64(data: bytes) -> int:
    """XXH3-64 (seed 0) of `data`: xxhash.xxh3_64_intdigest's value (for tests and checks)."""
    return int(_xxh3_whole(np.frombuffer(data, dtype=np.uint8), _SECRET))


@_compiled
def _word_units(text: UInt8Array, mapping: UInt8Array, secret: UInt8Array) -> UInt64Array:
    # One pass maps the bytes and notes where each token starts and ends without a branch
    # (edges[2t], edges[2t + 1]: a space after a token or a token after a space moves the count
    # on), a second hashes the tokens: 1.8 times the speed of a loop per token and per run of
    # spaces, whose branch per byte is mispredicted at every edge.
    size = len(text)
    mapped = np.empty(size, dtype=np.uint8)
    edges = np.empty(size + 2, dtype=np.int64)
    count, before = 0, np.uint8(1)  # before: whether the byte before is a space
    for at in range(size):
        byte = mapping[text[at]]
        mapped[at] = byte
        space = np.uint8(byte == _SPACE)
        edges[count] = at
        count += int(space ^ before)
        before = space
    if not before:  # the text ends inside a token
        edges[count] = size
        count += 1
    out = np.empty(count // 2, dtype=np.uint64)
    for token in range(count // 2):
        start, stop = edges[2 * token], edges[2 * token + 1]
        if stop - start > 16:
            out[token] = _xxh3_over_16(mapped, start, stop - start, secret)
        else:
            out[token] = _xxh3_short(mapped, start, stop - start, secret)
    return out


def word_units(text: bytes, mapping: bytes = bytes(range(256))) -> UInt64Array:
    """xxh3_64 of each token of `text` after mapping each byte through `mapping` (256 bytes):
    UTF-8 tokens separated by runs of spaces (0x20). The mapping runs here, outside the GIL."""
    return _word_units(np.frombuffer(text, dtype=np.uint8), np.frombuffer(mapping, dtype=np.uint8), _SECRET)


@_compiled
def _char_units(text: UInt8Array, secret: UInt8Array) -> UInt64Array:
    ascii_hashes = np.empty(128, dtype=np.uint64)
    one = np.empty(1, dtype=np.uint8)
    for value in range(128):
        one[0] = value
        ascii_hashes[value] = _xxh3_short(one, 0, 1, secret)
    out = np.empty(len(text), dtype=np.uint64)
    count, at = 0, 0
    while at < len(text):
        lead = text[at]
        size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        out[count] = ascii_hashes[lead] if size == 1 else _xxh3_short(text, at, size, secret)
        count += 1
        at += size
    return out[:count].copy()


def char_units(text: bytes) -> UInt64Array:
    """xxh3_64 of each character's UTF-8 bytes, for the characters of valid UTF-8 `text`."""
    return _char_units(np.frombuffer(text, dtype=np.uint8), _SECRET)


@_inline
def _fmix64(h: np.uint64) -> np.uint64:
    return _xorshift_multiply(h, 33, FMIX_C1, 33, FMIX_C2, 33)


@_compiled
def shingles(units: UInt64Array, n: int, multiplier: np.uint64) -> UInt64Array:
    """fmix64 of each window of n units, acc = acc * multiplier + unit (fewer units: one window)."""
    size = min(n, len(units))
    out = np.empty(len(units) - size + 1, dtype=np.uint64)
    for start in range(len(out)):
        acc = units[start]
        for offset in range(1, size):
            acc = acc * multiplier + units[start + offset]
        out[start] = _fmix64(acc)
    return out


@_compiled
def distinct(values: UInt64Array) -> UInt64Array:
    """The distinct values, in order of first appearance (an open-addressing hash set: the values
    are hashes already, so their low bits pick the slot)."""
    slots = 1
    while slots < 2 * len(values):
        slots *= 2
    mask = np.uint64(slots - 1)
    table = np.empty(slots, dtype=np.uint64)
    used = np.zeros(slots, dtype=np.bool_)
    out = np.empty(len(values), dtype=np.uint64)
    count = 0
    for value in values:
        slot = np.int64(value & mask)
        while used[slot] and table[slot] != value:
            slot = (slot + 1) & (slots - 1)
        if not used[slot]:
            used[slot] = True
            table[slot] = value
            out[count] = value
            count += 1
    return out[:count].copy()


@_inline
def _insert(table: UInt64Array, value: np.uint64) -> bool:
    """Put a non-zero `value` in the open-addressing set `table` (0: an empty slot); whether it was new."""
    mask = np.uint64(len(table) - 1)
    slot = value & mask
    while table[slot] != 0:
        if table[slot] == value:
            return False
        slot = (slot + np.uint64(1)) & mask
    table[slot] = value
    return True


@_compiled
def _narrow(table: UInt64Array, held: int, prefix: np.uint64, depth: int) -> int:
    """Keep in `table` only the values whose top `depth` bits are `prefix` (re-inserted, so that
    no probe chain has a hole); returns how many are left."""
    shift = np.uint64(64 - depth)
    kept = np.empty(held, dtype=np.uint64)
    count = 0
    for slot in range(len(table)):
        value = table[slot]
        if value != 0:
            table[slot] = 0
            if (value >> shift) == prefix:
                kept[count] = value
                count += 1
    for at in range(count):
        _insert(table, kept[at])
    return count


@_inline
def _add(
    value: np.uint64, table: UInt64Array, held: int, zero: bool, prefix: np.uint64, depth: int, limit: int
) -> tuple[int, bool, np.uint64, int]:
    """One value into the set if it is in the range, then the range cut to its lower half while
    the set holds more than `limit` (the values of the upper half dropped)."""
    if depth > 0 and (value >> np.uint64(64 - depth)) != prefix:
        return held, zero, prefix, depth
    if value == 0:
        if not zero:
            zero = True
            held += 1
    elif _insert(table, value):
        held += 1
    while held > limit:
        depth += 1
        prefix = prefix << np.uint64(1)
        zero = zero and prefix == 0  # 0 is in a range only if its prefix is 0
        held = _narrow(table, held, prefix, depth) + (1 if zero else 0)
    return held, zero, prefix, depth


@_compiled
def _grown(table: UInt64Array) -> UInt64Array:
    """The values of the hash set `table` in one twice its size."""
    bigger = np.zeros(2 * len(table), dtype=np.uint64)
    for value in table:
        if value != 0:
            _insert(bigger, value)
    return bigger


_BLOCK = 4096  # values filtered at a time before they are added (a loop without branches)


# A set being collected, as collect passes it on: (table, held, zero, prefix, depth).
SetState = tuple[UInt64Array, int, bool, np.uint64, int]


@_inline
def _add_block(block: UInt64Array, count: int, state: SetState, limit: int, largest: int) -> SetState:
    """block[:count] into the set: first those in the range moved to the block's front, then
    each added (_add checks the range again: it may be cut meanwhile). The table doubles when it
    is half full, up to `largest` slots."""
    table, held, zero, prefix, depth = state
    kept = count
    if depth > 0:
        shift = np.uint64(64 - depth)
        kept = 0
        for at in range(count):
            value = block[at]
            block[kept] = value
            kept += (value >> shift) == prefix
    for at in range(kept):
        held, zero, prefix, depth = _add(block[at], table, held, zero, prefix, depth, limit)
        if 2 * held >= len(table) and len(table) < largest:
            table = _grown(table)
    return table, held, zero, prefix, depth


@_compiled
def collect(values: UInt64Array, state: SetState, limit: int, largest: int) -> SetState:
    """Add the values to a set of at most `limit` values: those in the range of hash values
    whose top `depth` bits are `prefix` (all of them at depth 0). The state's `table` is an
    open-addressing hash set (0 marks an empty slot; the value 0 is the flag `zero`) holding
    `held` values; it doubles when half full, up to `largest` slots.

    When the set would hold more than `limit`, the range is cut to its lower half, and the values
    of the upper half dropped, until it does not. Returns the new state."""
    block = np.empty(_BLOCK, dtype=np.uint64)
    for start in range(0, len(values), _BLOCK):
        count = min(_BLOCK, len(values) - start)
        block[:count] = values[start : start + count]
        state = _add_block(block, count, state, limit, largest)
    return state


@_compiled
def collect_bytes(
    data: UInt8Array,
    unit_hashes: UInt64Array,
    size: int,
    multiplier: np.uint64,
    state: SetState,
    limit: int,
    largest: int,
) -> SetState:
    """collect() of the shingle hashes of the byte `size`-grams of `data`, computed here as
    shingles() computes them from the bytes' unit hashes (unit_hashes[byte]): a pass over a large
    file writes no array of hashes."""
    block = np.empty(_BLOCK, dtype=np.uint64)
    end = len(data) - size + 1
    for start in range(0, end, _BLOCK):
        count = min(_BLOCK, end - start)
        for at in range(count):
            acc = unit_hashes[data[start + at]]
            for offset in range(1, size):
                acc = acc * multiplier + unit_hashes[data[start + at + offset]]
            block[at] = _fmix64(acc)
        state = _add_block(block, count, state, limit, largest)
    return state


@_compiled
def drain(table: UInt64Array) -> int:
    """Move the values of the hash set `table` to its front, zeros after them; returns how many."""
    count = 0
    for slot in range(len(table)):
        value = table[slot]
        if value != 0:
            table[slot] = 0
            table[count] = value
            count += 1
    return count


@_compiled
def byte_histogram(values: UInt64Array, words: int, wide_key: np.uint64) -> npt.NDArray[np.int64]:
    """counts[256 * j + v]: how many values have byte j equal to v. Bytes 0-7 are the value's;
    with words = 2, bytes 8-15 are those of fmix64(value XOR wide_key) (128-bit fingerprints)."""
    counts = np.zeros(256 * 8 * words, dtype=np.int64)
    for value in values:
        for byte in range(8):
            counts[256 * byte + np.int64((value >> np.uint64(8 * byte)) & np.uint64(0xFF))] += 1
        if words == 2:
            second = _fmix64(value ^ wide_key)
            for byte in range(8):
                counts[2048 + 256 * byte + np.int64((second >> np.uint64(8 * byte)) & np.uint64(0xFF))] += 1
    return counts


_MINIMA_BLOCK = 2048  # values taken through all the permutations at a time (16 KiB: in L1 cache)


@_inline
def _fmix64_after_first_shift(h: np.uint64) -> np.uint64:
    """fmix64 less its first step, h ^ (h >> 33) (which minima applies to values and seeds apart)."""
    h *= FMIX_C1
    h ^= h >> np.uint64(33)
    h *= FMIX_C2
    return h ^ (h >> np.uint64(33))


@_compiled
def minima(values: UInt64Array, seeds: UInt64Array) -> UInt64Array:
    """For each seed, the least fmix64(value XOR seed) over the values (MinHash's signature).

    A block of values at a time, seed by seed, so that the inner loop is a minimum over an array,
    which the compiler vectorises (twice as fast as seed by seed for each value: one-bit MinHash,
    fingerprint spec v3, spends most of its time here). fmix64's first step is linear in XOR:
    (v ^ s) ^ ((v ^ s) >> 33) = (v ^ v >> 33) ^ (s ^ s >> 33), so it is done once per value and seed.
    """
    out = np.full(len(seeds), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    block = np.empty(min(len(values), _MINIMA_BLOCK), dtype=np.uint64)
    for start in range(0, len(values), _MINIMA_BLOCK):
        size = min(_MINIMA_BLOCK, len(values) - start)
        for at in range(size):
            value = values[start + at]
            block[at] = value ^ (value >> np.uint64(33))
        for position in range(len(seeds)):
            seed = seeds[position] ^ (seeds[position] >> np.uint64(33))
            least = out[position]
            for at in range(size):
                least = min(least, _fmix64_after_first_shift(block[at] ^ seed))
            out[position] = least
    return out


@_compiled
def probe_index(bins: int, max_probes: int, probe_seed: np.uint64) -> tuple[Any, Any, Any]:
    """Where the check's densification probes go, inverted: for each bin b, the (empty bin,
    attempt) pairs whose probe lands on b, rows [starts[b], starts[b + 1]) of `slots` and
    `attempts`. The same for every document, so it is computed once (1 MiB of probes)."""
    shift = np.uint64(64 - int(np.log2(bins)))
    targets = np.empty(bins * max_probes, dtype=np.int64)
    starts = np.zeros(bins + 1, dtype=np.int64)
    for slot in range(bins):
        for attempt in range(max_probes):
            key = (np.uint64(slot) << np.uint64(32)) | np.uint64(attempt)
            target = np.int64(_fmix64(key ^ probe_seed) >> shift)
            targets[slot * max_probes + attempt] = target
            starts[target + 1] += 1
    starts = np.cumsum(starts)
    at = starts[:-1].copy()
    slots = np.empty(bins * max_probes, dtype=np.int32)
    attempts = np.empty(bins * max_probes, dtype=np.int32)
    for row in range(bins * max_probes):
        target = targets[row]
        slots[at[target]] = row // max_probes
        attempts[at[target]] = row % max_probes
        at[target] += 1
    return starts, slots, attempts


@_compiled
def check_bins(
    values: UInt64Array, least: UInt64Array, full: npt.NDArray[np.bool_], check_seed: np.uint64
) -> None:
    """Signature spec v2's check, its bins: each value x goes to the bin of the top bits of
    fmix64(x XOR check_seed), which keeps the least (`least`, and `full` once it has one). Values
    may come in any number of calls: the least of each bin is the same."""
    shift = np.uint64(64 - int(np.log2(len(least))))
    for value in values:
        mixed = _fmix64(value ^ check_seed)
        landing = np.int64(mixed >> shift)
        if not full[landing] or mixed < least[landing]:
            least[landing] = mixed
            full[landing] = True


@_compiled
def check_bits(
    values: UInt64Array,
    bins: int,
    check_seed: np.uint64,
    probe_seed: np.uint64,
    bit_seed: np.uint64,
    max_probes: int,
    probes: tuple[Any, Any, Any],
) -> npt.NDArray[np.uint8]:
    """Signature spec v2's check, one byte (0 or 1) per bin: bins by the top bits of
    fmix64(x XOR check_seed) keeping the least (check_bins), then check_finish. See
    minhash.check_words for the spec; `probes` is probe_index(bins, max_probes, probe_seed)."""
    least = np.zeros(bins, dtype=np.uint64)
    full = np.zeros(bins, dtype=np.bool_)
    check_bins(values, least, full, check_seed)
    return check_finish(least, full, probe_seed, bit_seed, max_probes, probes)


@_compiled
def check_finish(
    least: UInt64Array,
    full: npt.NDArray[np.bool_],
    probe_seed: np.uint64,
    bit_seed: np.uint64,
    max_probes: int,
    probes: tuple[Any, Any, Any],
) -> npt.NDArray[np.uint8]:
    """The check's bits from its bins (check_bins; at least one full): empty bins filled by
    probing (then by the next filled bin, circularly), and the lowest bit of fmix64(bin value
    XOR bit_seed).

    An empty bin takes the filled bin its earliest probe lands on. With many filled bins that is
    found by probing forward (a few probes each); with few (a short document), by walking the
    probes that land on each filled bin (probe_index), where forward probing would compute up to
    max_probes probes for nearly every bin. Both give the same bins.
    """
    bins = len(least)
    shift = np.uint64(64 - int(np.log2(bins)))
    filled = np.count_nonzero(full)
    source = np.full(bins, -1, dtype=np.int64)  # the filled bin whose value an empty bin takes
    if filled * max_probes < (bins - filled) * (bins // filled):  # few filled bins: walk the index
        starts, slots, attempts = probes
        earliest = np.full(bins, max_probes, dtype=np.int64)
        for target in range(bins):
            if full[target]:
                for row in range(starts[target], starts[target + 1]):
                    empty = slots[row]
                    if attempts[row] < earliest[empty]:
                        earliest[empty] = attempts[row]
                        source[empty] = target
    else:
        for slot in range(bins):
            if not full[slot]:
                for attempt in range(max_probes):
                    key = (np.uint64(slot) << np.uint64(32)) | np.uint64(attempt)
                    probe = np.int64(_fmix64(key ^ probe_seed) >> shift)
                    if full[probe]:
                        source[slot] = probe
                        break
    following = -1  # no probe landed on a filled bin: the next filled bin, circularly
    for step in range(2 * bins - 1, -1, -1):
        at = step % bins
        if source[at] < 0 and following >= 0 and step < bins:
            source[at] = following
        if full[at]:
            following = at
            source[at] = at
    out = np.empty(bins, dtype=np.uint8)
    for slot in range(bins):
        out[slot] = np.uint8(_fmix64(least[source[slot]] ^ bit_seed) & np.uint64(1))
    return out


# A Shingling as the compiled loops take it: (chars, mapping as bytes, XXH3's secret, n, multiplier).
_Units = tuple[bool, UInt8Array, UInt8Array, int, np.uint64]


@_inline
def _text_shingles(
    buffer: UInt8Array, starts: npt.NDArray[np.int64], document: int, units: _Units
) -> UInt64Array:
    """The shingle hashes of text `document` of the joined texts (none for a text without units)."""
    chars, mapping, secret, n, multiplier = units
    text = buffer[starts[document] : starts[document + 1]]
    found = _char_units(text, secret) if chars else _word_units(text, mapping, secret)
    return shingles(found, n, multiplier) if len(found) else found


@_compiled
def _bit_counts(
    buffer: UInt8Array,
    starts: npt.NDArray[np.int64],
    units: _Units,
    distinct_only: bool,
    words: int,
    wide_key: np.uint64,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    documents = len(starts) - 1
    ones = np.zeros((documents, 64 * words), dtype=np.int64)
    totals = np.zeros(documents, dtype=np.int64)
    for document in range(documents):
        hashes = _text_shingles(buffer, starts, document, units)
        if len(hashes) == 0:
            continue
        if distinct_only:
            hashes = distinct(hashes)
        totals[document] = len(hashes)
        histogram = byte_histogram(hashes, words, wide_key)
        for byte in range(8 * words):
            for value in range(256):
                count = histogram[256 * byte + value]
                for bit in range(8):
                    ones[document, 8 * byte + bit] += count * ((value >> bit) & 1)
    return ones, totals


def bit_counts(
    texts: list[bytes], shingling: Shingling, distinct_only: bool, words: int, wide_key: np.uint64
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each text, in one call outside the GIL: how many of its shingles (made as `shingling`
    says; only the distinct ones if `distinct_only`) have each of the 64 * `words` bits set, as
    byte_histogram counts them, and how many shingles it has (0: none)."""
    return _bit_counts(*_joined(texts, shingling), distinct_only, words, wide_key)


def _joined(texts: list[bytes], shingling: Shingling) -> tuple[UInt8Array, npt.NDArray[np.int64], _Units]:
    """The texts in one buffer, where each starts (text i is buffer[starts[i]:starts[i + 1]]),
    and the shingling as the loops take it."""
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in texts], out=starts[1:])
    chars, mapping, n, multiplier = shingling
    units = (chars, np.frombuffer(mapping, dtype=np.uint8), _SECRET, n, multiplier)
    return np.frombuffer(b"".join(texts), dtype=np.uint8), starts, units


@_compiled
def _signatures(
    buffer: UInt8Array,
    starts: npt.NDArray[np.int64],
    units: _Units,
    seeds: UInt64Array,
    check: tuple[int, np.uint64, np.uint64, np.uint64, int],
    probes: tuple[Any, Any, Any],
) -> tuple[UInt64Array, npt.NDArray[np.bool_]]:
    bins, check_seed, probe_seed, bit_seed, max_probes = check
    documents, permutations = len(starts) - 1, len(seeds)
    out = np.zeros((documents, permutations + bins // 64), dtype=np.uint64)
    found = np.zeros(documents, dtype=np.bool_)
    for document in range(documents):
        hashes = _text_shingles(buffer, starts, document, units)
        if len(hashes) == 0:
            continue
        found[document] = True
        hashes = distinct(hashes)  # minima of a set: each value once
        out[document, :permutations] = minima(hashes, seeds)
        if bins:
            bits = check_bits(hashes, bins, check_seed, probe_seed, bit_seed, max_probes, probes)
            for slot in range(bins):
                if bits[slot]:
                    out[document, permutations + slot // 64] |= np.uint64(1) << np.uint64(slot % 64)
    return out, found


def signatures(
    texts: list[bytes],
    shingling: Shingling,
    seeds: UInt64Array,
    check: tuple[int, np.uint64, np.uint64, np.uint64, int],
    probes: tuple[Any, Any, Any],
) -> tuple[UInt64Array, npt.NDArray[np.bool_]]:
    """For each text, in one call outside the GIL: its MinHash minima over `seeds`, then (when
    check[0], the bins, is not 0) its check_bits packed into 64-bit words, bin i as bit i % 64 of
    word i // 64; and whether it has any units. Shingles as in bit_counts; `check` is
    (bins, check_seed, probe_seed, bit_seed, max_probes) and `probes` their probe_index."""
    return _signatures(*_joined(texts, shingling), seeds, check, probes)


# All pairs (simdb.plan.pairing): each row's prefix and position packed in one word, the words radix
# sorted, each run of equal prefixes compared pair by pair.


_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)


@_compiled
def _sorted_high(values: UInt64Array, low: int, bits: int) -> UInt64Array:
    """The values ordered by their bits low .. low + bits - 1 and, among equals, as they came: an
    LSD radix sort of at most 11 bits a pass, linear in the rows where a comparison sort is not."""
    passes = (bits + 10) // 11
    if passes == 0:
        return values
    digit = (bits + passes - 1) // passes
    mask = np.uint64((1 << digit) - 1)
    spare = np.empty_like(values)
    for step in range(passes):
        shift = np.uint64(low + step * digit)
        starts = np.zeros((1 << digit) + 1, dtype=np.int64)
        for value in values:
            starts[((value >> shift) & mask) + np.uint64(1)] += 1
        for bucket in range(1 << digit):
            starts[bucket + 1] += starts[bucket]
        for value in values:
            bucket = (value >> shift) & mask
            spare[starts[bucket]] = value
            starts[bucket] += 1
        values, spare = spare, values
    return values


@_inline
def _popcount(value: np.uint64) -> np.uint64:
    """The bits set in a word (the classic SWAR sum)."""
    pairs = np.uint64(0x3333333333333333)
    value = value - ((value >> np.uint64(1)) & np.uint64(0x5555555555555555))
    value = (value & pairs) + ((value >> np.uint64(2)) & pairs)
    value = (value + (value >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (value * np.uint64(0x0101010101010101)) >> np.uint64(56)


@_inline
def _table_prefix(value: np.uint64, prefix: npt.NDArray[np.int64]) -> np.uint64:
    """A fingerprint's table prefix: its blocks, listed as (source, width, target) rows, moved
    to their targets, counted from the prefix's lowest bit."""
    key = np.uint64(0)
    for source, width, target in prefix:
        block = (value >> np.uint64(source)) & (_ALL_BITS >> np.uint64(64 - width))
        key |= block << np.uint64(target)
    return key


@_inline
def _prefix_bits(prefix: npt.NDArray[np.int64]) -> int:
    """The width of a table prefix listed as (source, width, target) rows."""
    bits = 0
    for _, width, target in prefix:
        bits = max(bits, target + width)
    return bits


@_inline
def _first_found_here(differ: np.uint64, limit: np.uint64, own: np.uint64, earlier: UInt64Array) -> bool:
    """Whether two fingerprints that differ in the bits `differ` are within `limit` bits, share
    this table's prefix (agree on mask `own`) and no earlier table's (a pair is kept once)."""
    if _popcount(differ) > limit or differ & own != 0:
        return False
    for mask in earlier:  # noqa: SIM110 (a loop numba compiles, where all() of a generator is slow)
        if differ & mask == 0:
            return False
    return True


@_compiled
def close_pairs(
    fingerprints: UInt64Array,
    prefix: npt.NDArray[np.int64],
    own: np.uint64,
    earlier: UInt64Array,
    max_distance: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(i, j), i < j, of the fingerprints that agree on all the bits of mask `own` (share one
    table's prefix) and differ in at most `max_distance` bits, except those that agree on all
    the bits of one of the `earlier` masks (an earlier table found them): each pair once.

    `prefix` lists the table's prefix blocks as (source, width, target) rows, the target
    counted from the prefix's lowest bit. The prefix and the row's position share one word, the
    prefix cut to the bits the position leaves (a cut prefix groups more rows, never fewer; the
    whole prefix is compared within the run)."""
    rows = len(fingerprints)
    position_bits = max(1, int(np.ceil(np.log2(max(rows, 2)))))
    prefix_bits = _prefix_bits(prefix)
    kept_bits = min(prefix_bits, 64 - position_bits)
    cut = np.uint64(prefix_bits - kept_bits)
    packed = np.empty(rows, dtype=np.uint64)
    for row in range(rows):
        key = _table_prefix(fingerprints[row], prefix)
        packed[row] = ((key >> cut) << np.uint64(position_bits)) | np.uint64(row)
    packed = _sorted_high(packed, position_bits, kept_bits)

    positions = np.uint64((1 << position_bits) - 1)
    ordered = np.empty(rows, dtype=np.uint64)  # the fingerprints in sorted order: runs read in sequence
    for a in range(rows):
        ordered[a] = fingerprints[np.int64(packed[a] & positions)]

    first, second = np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int64)
    count, start = 0, 0
    limit, low = np.uint64(max_distance), np.uint64(position_bits)
    while start < rows:
        end = start + 1
        while end < rows and (packed[end] >> low) == (packed[start] >> low):
            end += 1
        for a in range(start, end - 1):
            value = ordered[a]
            for b in range(a + 1, end):
                if not _first_found_here(value ^ ordered[b], limit, own, earlier):
                    continue
                if count == len(first):
                    first, second = np.concatenate((first, first)), np.concatenate((second, second))
                # (the lower position first: the sort kept the rows' order among equal prefixes)
                first[count], second[count] = np.int64(packed[a] & positions), np.int64(packed[b] & positions)
                count += 1
        start = end
    return first[:count].copy(), second[:count].copy()


@_inline
def _put_be(out: UInt8Array, at: int, value: np.uint64, size: int) -> None:
    """`size` bytes of `value`, big-endian (network order, as binary COPY wants), at out[at:]."""
    for byte in range(size):
        out[at + byte] = np.uint8((value >> np.uint64(8 * (size - 1 - byte))) & np.uint64(0xFF))


@_compiled
def numbered_keys(prefix: UInt8Array, first: int, count: int) -> tuple[UInt8Array, npt.NDArray[np.int64]]:
    """Keys prefix + str(first), prefix + str(first + 1), ...: their bytes end to end, and where
    each ends (the keys of rows that come without one: a numpy or binary file's row numbers)."""
    widest = len(prefix) + 20
    out = np.empty(count * widest, dtype=np.uint8)
    ends = np.empty(count, dtype=np.int64)
    digits = np.empty(20, dtype=np.uint8)
    at = 0
    for row in range(count):
        out[at : at + len(prefix)] = prefix
        at += len(prefix)
        number, size = first + row, 0
        while True:
            digits[size] = np.uint8(48 + number % 10)
            number //= 10
            size += 1
            if number == 0:
                break
        for digit in range(size):
            out[at + digit] = digits[size - 1 - digit]
        at += size
        ends[row] = at
    return out[:at].copy(), ends


@_compiled
def copy_tuples(keys: UInt8Array, ends: npt.NDArray[np.int64], values: UInt64Array) -> UInt8Array:
    """Binary COPY tuples of rows (text key, bigint value): key i is keys[ends[i-1]:ends[i]]
    (UTF-8), its value values[i] (the bigint's two's complement). Without the file's header and
    trailer."""
    rows = len(values)
    key_bytes = ends[rows - 1] if rows else 0
    out = np.empty(rows * 18 + key_bytes, dtype=np.uint8)  # field count, 2 lengths, 8 value bytes
    at, start = 0, 0
    for row in range(rows):
        _put_be(out, at, np.uint64(2), 2)
        size = ends[row] - start
        _put_be(out, at + 2, np.uint64(size), 4)
        out[at + 6 : at + 6 + size] = keys[start : ends[row]]
        at += 6 + size
        _put_be(out, at, np.uint64(8), 4)
        _put_be(out, at + 4, values[row], 8)
        at += 12
        start = ends[row]
    return out


@_compiled
def prefix_tops(fingerprints: UInt64Array, prefix: npt.NDArray[np.int64], shift: int) -> UInt8Array:
    """Each fingerprint's table prefix (its blocks as close_pairs assembles them) >> shift: the
    range of prefixes a row falls in, when a table's rows are paired a range at a time (fewer
    than 256 ranges)."""
    tops = np.empty(len(fingerprints), dtype=np.uint8)
    for row in range(len(fingerprints)):
        tops[row] = np.uint8(_table_prefix(fingerprints[row], prefix) >> np.uint64(shift))
    return tops


@_compiled
def touching_pairs(
    fingerprints: UInt64Array,
    fresh: npt.NDArray[np.int64],
    is_fresh: npt.NDArray[np.bool_],
    prefix: npt.NDArray[np.int64],
    own: np.uint64,
    earlier: UInt64Array,
    max_distance: int,
    lookup_bits: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pairs of close_pairs (same arguments) that involve a `fresh` row (positions; is_fresh
    marks them): each row's prefix is looked up among the fresh rows' by its top `lookup_bits`
    bits (a bit each, then where the fresh rows with them start), so the work is a pass over the
    rows and the fresh rows' candidates, not a sort of every row. A pair of two fresh rows is
    kept from the lower one."""
    prefix_bits = _prefix_bits(prefix)
    lookup_bits = min(prefix_bits, lookup_bits)
    shift = np.uint64(prefix_bits - lookup_bits)
    keys = np.empty(len(fresh), dtype=np.uint64)
    for q in range(len(fresh)):
        keys[q] = _table_prefix(fingerprints[fresh[q]], prefix)
    order = np.argsort(keys)
    owners = fresh[order]
    held = np.empty((len(fresh), 2), dtype=np.uint64)  # each fresh row's prefix and fingerprint, side by side
    held[:, 0], held[:, 1] = keys[order], fingerprints[owners]
    starts = np.zeros((1 << lookup_bits) + 1, dtype=np.int32)
    seen = np.zeros(((1 << lookup_bits) + 63) // 64, dtype=np.uint64)
    for key in held[:, 0]:
        top = key >> shift
        starts[top + np.uint64(1)] += 1
        seen[top >> np.uint64(6)] |= np.uint64(1) << (top & np.uint64(63))
    for top in range(1 << lookup_bits):
        starts[top + 1] += starts[top]

    first, second = np.empty(1024, dtype=np.int64), np.empty(1024, dtype=np.int64)
    count = 0
    limit = np.uint64(max_distance)
    for row in range(len(fingerprints)):
        value = fingerprints[row]
        key = _table_prefix(value, prefix)
        top = key >> shift
        if (seen[top >> np.uint64(6)] >> (top & np.uint64(63))) & np.uint64(1) == 0:
            continue
        for at in range(starts[top], starts[top + np.uint64(1)]):
            if held[at, 0] != key:
                continue
            if not _first_found_here(value ^ held[at, 1], limit, own, earlier):
                continue
            other = owners[at]
            if other == row or (is_fresh[row] and row > other):
                continue
            if count == len(first):
                first, second = np.concatenate((first, first)), np.concatenate((second, second))
            first[count], second[count] = min(row, other), max(row, other)
            count += 1
    return first[:count].copy(), second[:count].copy()


@_compiled
def positions_of(
    pages: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.uint16],
    blocks: npt.NDArray[np.uint32],
    places: npt.NDArray[np.uint16],
) -> npt.NDArray[np.int64]:
    """The position of each address (block, place) among rows read in address order, kept as
    rowscan.Column keeps them (the page of each run of rows, the run's first position, each
    row's offset in its page); -1 for an address not among them."""
    found = np.full(len(blocks), -1, dtype=np.int64)
    for q in range(len(blocks)):
        run = np.searchsorted(pages, blocks[q])
        if run == len(pages) or pages[run] != blocks[q]:
            continue
        end = starts[run + 1] if run + 1 < len(starts) else len(offsets)
        for position in range(starts[run], end):
            if offsets[position] == places[q]:
                found[q] = position
                break
    return found
