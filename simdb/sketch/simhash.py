"""Fingerprint specs: normalise, tokenise, shingle, hash with xxh3, weigh, fold to 64 or 128
bits; and the one table of spec versions and what computes each (FINGERPRINT_METHODS).

Spec v1 weighs each shingle by its number of occurrences; spec v2 (SimHash)
counts each distinct shingle once, so the fingerprint tracks the overlap of shingle sets
(Jaccard) and a few frequent shingles (markup, runs of zero bytes) cannot decide every bit.
Steps 1-4 are the same in both. A 128-bit fingerprint keeps the 64-bit one as its low half and
folds a second word per shingle, fmix64(hash XOR WIDE_KEY), into its high half. A long document
is hashed a piece at a time, in memory bounded whatever its length (see PIECE), with the same
fingerprint. Spec v3, what `simdb create` gives a new index, is no SimHash: the same steps 1-4,
then the lowest bits of MinHash values (one-bit MinHash, simdb.sketch.onebit).

Pure code (numpy, xxhash and the compiled loops of simdb.kernels.compiled; simdb.sketch.short_text
for one short text while the kernels are not loaded), so it is fast to test and easy to port;
docs/how-it-works.md gives the spec step by step, tests pin it with known-answer vectors and check
it against a plain loop-by-loop reading of the spec.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.errors import InvalidParameter
from simdb.sketch import short_text as onetext

# The library's default spec: what fingerprint() computes and SimhashSpec() makes, SimHash v2. It
# stays, so that code and migrations written before keep their meaning; the CLI gives a new
# index NEW_INDEX_SPEC (SPEC_VERSIONS, at the end: all there are).
SPEC_VERSION = 2
NEW_INDEX_SPEC = 3  # one-bit MinHash: `simdb create`, `ingest --create`, `attach`, `simdb fingerprint`
SIMHASH_SPECS = (1, 2)  # the spec versions that are SimHashes (simhash() of shingle hashes)
WIDTHS = (64, 128)  # fingerprint widths in bits; 64 is the default
WORD = 64  # bits of one shingle hash

TOKEN_PATTERN = re.compile(r"\w+")
_NOT_WORD = re.compile(r"[^\w\x00]+")  # what separates tokens, except the NUL between pieces
SHINGLE_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
WIDE_KEY = np.uint64(0x6A09E667F3BCC908)  # frac(sqrt(2)) * 2^64: the second word's hashes for 128 bits
FEATURE_KINDS = ("word", "char", "bytes")
# Memory per document is bounded: a document longer than PIECE (bytes, or characters of text) is
# hashed a piece at a time, and spec v2 holds at most DISTINCT_LIMIT distinct shingles at once
# (a hash set of twice as many slots: 128 MiB), passing over the document once per range of hash
# values where it has more. The fingerprint is the same as the whole document's.
PIECE = 1 << 20
DISTINCT_LIMIT = 1 << 23
_FIRST_SLOTS = 1 << 12  # a document's hash set starts this small and doubles as it fills
_SPACES = (" ", "\n", "\t", "\r")  # where a text is cut into pieces (before one of them)
MAX_SHINGLE = 32

# _BIT_TABLE[v, b] is bit b of byte value v: turns per-byte value histograms into bit counts.
_BIT_TABLE = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.int64)

UInt64Array = npt.NDArray[np.uint64]
T = TypeVar("T")

# ASCII bytes: letters lower-cased, digits and '_' kept, everything else turned into a space.
ASCII_WORDS = bytes(
    (ord(chr(c).lower()) if chr(c).isalnum() or c == ord("_") else ord(" ")) if c < 128 else c
    for c in range(256)
)


@dataclass(frozen=True)
class Features:
    """Which shingles make a fingerprint: word n-grams or character n-grams."""

    kind: str = "word"
    n: int = 3

    def __post_init__(self) -> None:
        if self.kind not in FEATURE_KINDS:
            raise InvalidParameter(
                f"unknown feature kind {self.kind!r}", "use 'word:N', 'char:N' or 'bytes:N', e.g. word:3"
            )
        if not 1 <= self.n <= MAX_SHINGLE:
            raise InvalidParameter(
                f"shingle size {self.n} is out of range", f"use 1 to {MAX_SHINGLE}, e.g. word:3"
            )

    @property
    def binary(self) -> bool:
        """Whether these features read a document's raw bytes rather than its text."""
        return self.kind == "bytes"

    @classmethod
    def parse(cls, text: str) -> Features:
        """Parse 'word:3' / 'char:5' / 'bytes:4' (bare: word n=3, char n=5, bytes n=4)."""
        kind, _, size = text.strip().lower().partition(":")
        if not size:
            return cls(kind, {"word": 3, "char": 5}.get(kind, 4))
        if not size.isdigit():
            raise InvalidParameter(
                f"bad feature setting {text!r}", "write KIND:N with N a whole number, e.g. word:3"
            )
        return cls(kind, int(size))

    def __str__(self) -> str:
        return f"{self.kind}:{self.n}"


DEFAULT_FEATURES = Features()


class EmptyDocument(ValueError):
    """The document has no tokens, so it has no fingerprint (callers count and skip it)."""


def empty(features: Features) -> EmptyDocument:
    """The EmptyDocument of a document without shingles under these features."""
    return EmptyDocument(
        "the document is empty" if features.binary else "the document has no word characters"
    )


def normalize(text: str) -> str:
    """Step 1: Unicode NFKC, then case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


def token_text(text: str) -> bytes:
    """Step 2: runs of word characters (Python's Unicode \\w) of the normalised text, as UTF-8,
    separated by spaces (runs of them; a token never holds one).

    Byte-level fast path, exact for any text: ASCII non-word characters become spaces and ASCII
    letters lower case; only the pieces holding non-ASCII characters (runs of bytes between
    those spaces) are normalised, case-folded and split by the regular expression. That is the
    same as normalising the whole text: NFKC has a boundary before every ASCII character (each
    is a starter that nothing before it composes with), so it works piece by piece, and case
    folding maps character by character. A combining mark at the start of a piece could compose
    only with the ASCII separator before it ("<" and U+0338 make U+226E), which gives no word
    character either way. All the pieces of a text go through NFKC, case folding and the
    expression in one call each, joined by NUL (which they cannot hold: it is an ASCII
    separator, and neither NFKC nor case folding produces it).
    """
    raw = text.encode("utf-8")
    spaced = raw.translate(ASCII_WORDS)
    if text.isascii():  # NFKC is the identity on ASCII and casefold is lower-casing
        return spaced
    spans = _pieces(spaced)
    pieces = normalize(b"\x00".join([raw[start:end] for start, end in spans]).decode("utf-8"))
    words = _NOT_WORD.sub(" ", pieces).encode("utf-8").split(b"\x00")
    between = zip([0] + [end for _, end in spans], [start for start, _ in spans] + [len(spaced)], strict=True)
    kept = [spaced[end:start] for end, start in between]  # the ASCII around the pieces, one more part
    return b"".join([part for pair in zip(kept, words, strict=False) for part in pair]) + kept[-1]


def _pieces(spaced: bytes) -> list[tuple[int, int]]:
    """Where the runs of bytes other than spaces that hold a non-ASCII character (a byte above
    0x7F) start and end: each such byte's run, from the space before it to the space after."""
    codes = np.frombuffer(spaced, dtype=np.uint8)
    high, spaces = np.flatnonzero(codes > 0x7F), np.flatnonzero(codes == 0x20)
    after = np.searchsorted(spaces, high)  # the first space after each high byte
    bounds = np.concatenate(([-1], spaces, [len(spaced)]))
    starts, ends = bounds[after] + 1, bounds[after + 1]
    first = np.concatenate(([True], starts[1:] != starts[:-1]))  # one span a piece
    return list(zip(starts[first].tolist(), ends[first].tolist(), strict=True))


def tokens(text: str) -> list[bytes]:
    """Step 2's tokens as a list (the fingerprint itself reads token_text)."""
    return token_text(text).split()


def shingle_hashes(unit_hashes: UInt64Array, n: int) -> UInt64Array:
    """Step 4: hash of each window of n units: acc = acc * K + u (mod 2^64), then fmix64.

    A document with fewer than n units forms one shingle of all its units.
    """
    from simdb.kernels import compiled as kernels  # (numba loads on the first fingerprint, not with the CLI)

    return kernels.shingles(unit_hashes, n, SHINGLE_MULTIPLIER)


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


Pieces = Callable[[], Iterable[UInt64Array]]  # shingle hashes in pieces, from the start at each call
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
    `n`, the pieces are bytes (each beginning with the last n - 1 of the one before, _overlapping)
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
            state = (table, held, zero, np.uint64(prefix), depth, limit, largest)
            if n:  # fewer than n bytes in all: one shingle of them all
                size = min(n, len(values))
                table, held, zero, found, depth = kernels.collect_bytes(
                    values, _BYTE_HASHES, size, SHINGLE_MULTIPLIER, *state
                )
            else:
                table, held, zero, found, depth = kernels.collect(values, *state)
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
        return _counted(distinct_ranges(lambda: _byte_windows(content, n), n=n), bits)
    return _counted(distinct_ranges(document_shingles(content, features)), bits)


def check_spec(spec: int) -> int:
    """`spec` if this simdb computes fingerprints of that spec version, else InvalidParameter."""
    if spec not in SPEC_VERSIONS:
        raise InvalidParameter(
            f"unknown fingerprint spec {spec}", f"use one of {', '.join(map(str, SPEC_VERSIONS))}"
        )
    return spec


def check_bits(bits: int) -> int:
    """`bits` if it is a fingerprint width simdb makes (64 or 128), else InvalidParameter."""
    if bits not in WIDTHS:
        raise InvalidParameter(
            f"unknown fingerprint width {bits}", "use --bits 64 (the default) or --bits 128"
        )
    return bits


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


# xxh3_64 of each single byte value: the unit hashes of bytes features.
_BYTE_HASHES = np.array([xxhash.xxh3_64_intdigest(bytes([value])) for value in range(256)], dtype=np.uint64)


def fingerprint_bytes(data: bytes, n: int = 4, spec: int = SPEC_VERSION, bits: int = 64) -> int:
    """The fingerprint of raw content with bytes:N features (byte n-grams), for any file, text or not.

    Units are the bytes; unit hash = xxh3_64 of the single byte; shingles and the fold are as
    for text. Hashed a piece at a time, like any long document (see PIECE).
    """
    return fingerprint(data, Features("bytes", n), spec, bits)


class Stream(Protocol):
    """A document read in pieces, from its start at each call of `pieces`: a file too large to
    hold whole (readers.FileStream). Text comes as str pieces, raw content as bytes, cut anywhere
    between characters."""

    def pieces(self) -> Iterator[str | bytes]: ...


Content = str | bytes | Stream


def in_pieces(content: Content, features: Features) -> bool:
    """Whether a document is hashed a piece at a time: bytes features, text longer than PIECE,
    or a stream. (Shorter text goes to the kernels with the rest of its batch, in one call.)"""
    return features.binary or not isinstance(content, str) or len(content) > PIECE


def _raw_pieces(content: Content) -> Iterator[bytes | memoryview]:
    """A document's bytes (text in UTF-8) in pieces of at most PIECE."""
    if isinstance(content, str):
        for at in range(0, len(content), PIECE):
            yield content[at : at + PIECE].encode("utf-8")
        return
    for part in [content] if isinstance(content, bytes) else content.pieces():
        raw = memoryview(part.encode("utf-8") if isinstance(part, str) else part)
        for at in range(0, len(raw), PIECE):
            yield raw[at : at + PIECE]


def _text_pieces(content: Content) -> Iterator[str]:
    """A document's text in pieces of about PIECE characters, each cut just before white space.

    Steps 1-2 then give each piece exactly what they give it within the whole text: NFKC has a
    boundary before every ASCII character (nothing composes with one that precedes it), case
    folding maps character by character, and a token never spans white space. A stretch without
    white space longer than a piece is carried on until there is some.
    """
    if isinstance(content, bytes):
        raise TypeError("text features need text, not bytes")
    parts = (
        (content[at : at + PIECE] for at in range(0, len(content), PIECE))
        if isinstance(content, str)
        else content.pieces()
    )
    carry = ""
    for part in parts:
        if isinstance(part, bytes):
            raise TypeError("text features need text, not bytes")
        text = carry + part
        cut = max(text.rfind(space) for space in _SPACES)
        if cut > 0:
            yield text[:cut]
        carry = text[max(cut, 0) :]
    if carry:
        yield carry


def _unit_pieces(content: Content, features: Features) -> Iterator[UInt64Array]:
    """Steps 1-3 of text a piece at a time: unit hashes whose concatenation is the whole text's."""
    from simdb.kernels import compiled as kernels

    if features.kind == "word":
        for text in _text_pieces(content):
            yield kernels.word_units(unit_text(text, features), ASCII_WORDS)
        return
    space = kernels.char_units(b" ")
    started = False
    for text in _text_pieces(content):
        units = kernels.char_units(unit_text(text, features))
        if len(units):  # the tokens of two pieces are joined by a space, as all tokens are
            yield np.concatenate([space, units]) if started else units
            started = True


A = TypeVar("A", bound=np.generic)


def _overlapping(parts: Iterable[npt.NDArray[A]], n: int) -> Iterator[npt.NDArray[A]]:
    """The parts' concatenation again in pieces, each beginning with the last n - 1 elements of
    the one before, so that each window of n lies in exactly one piece and begins in it. (If
    there are fewer than n in all, one piece of them all.)"""
    carry: npt.NDArray[A] | None = None
    made = False
    for part in parts:
        window = part if carry is None or not len(carry) else np.concatenate([carry, part])
        if len(window) >= n:
            yield window
            made = True
            carry = window[len(window) - n + 1 :].copy()
        else:
            carry = window
    if not made and carry is not None and len(carry):
        yield carry


def _byte_windows(content: Content, n: int) -> Iterator[npt.NDArray[np.uint8]]:
    """A document's bytes (text in UTF-8) in pieces that overlap by n - 1 (_overlapping)."""
    return _overlapping((np.frombuffer(raw, dtype=np.uint8) for raw in _raw_pieces(content)), n)


def shingle_pieces(units: Iterable[UInt64Array], n: int) -> Iterator[UInt64Array]:
    """Step 4 a piece at a time: the shingle hashes of the units' concatenation (the last n - 1
    units of a piece begin windows that end in the next)."""
    for window in _overlapping(units, n):
        yield shingle_hashes(window, n)


def document_shingles(content: Content, features: Features) -> Pieces:
    """Steps 1-4 in pieces of bounded size: a function that yields the document's shingle
    hashes, from its start at each call (spec v2 may pass over a document more than once)."""
    if features.binary:
        n = features.n
        return lambda: (shingle_hashes(_BYTE_HASHES[raw], n) for raw in _byte_windows(content, n))
    return lambda: shingle_pieces(_unit_pieces(content, features), features.n)


def feature_hashes(content: Content, features: Features = DEFAULT_FEATURES) -> UInt64Array:
    """Steps 1-4: the 64-bit hash of every shingle occurrence of a document, in order, in one
    array (for measurements; sketches take them a piece at a time).

    For bytes features the units are the raw bytes, or the bytes of a text in UTF-8.
    """
    pieces = list(document_shingles(content, features)())
    if not pieces:
        raise empty(features)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def unit_text(content: str | bytes, features: Features) -> bytes:
    """Steps 1-2 for text features: the UTF-8 bytes the kernels take units from (mapped through
    ASCII_WORDS by the kernel for word features). Word features get ASCII text as it is (so the
    mapping runs outside the GIL); char features get the tokens joined by single spaces."""
    if isinstance(content, bytes):
        raise TypeError("text features need text, not bytes")
    if features.kind == "char":
        return b" ".join(token_text(content).split())
    return content.encode() if content.isascii() else token_text(content)


def sorted_out(
    contents: Sequence[Content], features: Features, alone: Callable[[Content], T | None]
) -> tuple[list[T | None], list[int], list[bytes]]:
    """A batch sorted out: the sketch `alone` makes of each document taken a piece at a time
    (in_pieces), else None, and where the others are, with their unit_text, for one call of the
    kernels."""
    found: list[T | None] = [None] * len(contents)
    whole: list[int] = []
    texts: list[bytes] = []
    for at, content in enumerate(contents):
        if isinstance(content, str) and not in_pieces(content, features):
            whole.append(at)
            texts.append(unit_text(content, features))
        else:
            found[at] = alone(content)
    return found, whole, texts


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
    [list[bytes], bool, bytes, int, np.uint64, bool, int, np.uint64],
    tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
]  # kernels.bit_counts and onetext.bit_counts


def without_kernels(texts: list[bytes]) -> bool:
    """Whether these unit texts are hashed in numpy (simdb.sketch.short_text) rather than by the compiled
    kernels: one short text in a process that has not loaded them (a query's start-up skips numba;
    the values are the same)."""
    return len(texts) == 1 and len(texts[0]) <= onetext.LIMIT and "simdb.kernels.compiled" not in sys.modules


def _bit_counts(texts: list[bytes]) -> BitCounts:
    """Where step 3-5's counters come from: the compiled kernels, or numpy (without_kernels)."""
    if without_kernels(texts):
        return onetext.bit_counts
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
    ones, totals = _bit_counts(texts)(
        texts,
        features.kind == "char",
        ASCII_WORDS,
        features.n,
        SHINGLE_MULTIPLIER,
        distinct,
        bits // WORD,
        WIDE_KEY,
    )
    majority = np.packbits(2 * ones > totals[:, None], axis=1, bitorder="little")  # step 5, row by row
    for at, row, total in zip(whole, majority, totals, strict=True):
        found[at] = int.from_bytes(row.tobytes(), "little") if total else None
    return found


def _onebit_minhashes(contents: Sequence[Content], features: Features, bits: int) -> list[int | None]:
    """Spec v3, one-bit MinHash: simdb.sketch.onebit (imported here: it builds on this module's steps 1-4)."""
    from simdb.sketch import onebit

    return onebit.fingerprints(contents, features, bits)


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
    3: FingerprintMethod("one-bit MinHash", _onebit_minhashes, 5, _onebit_difference),
}
SPEC_VERSIONS = tuple(FINGERPRINT_METHODS)
DEFAULT_MAX_DISTANCE = FINGERPRINT_METHODS[NEW_INDEX_SPEC].max_distance  # the k of `simdb create`
