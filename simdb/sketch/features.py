"""Steps 1-4 of every sketch, shared by SimHash, MinHash and one-bit MinHash: normalise a
document, cut it into tokens (words, characters or bytes), shingle them and hash each shingle
with xxh3, a piece at a time for a long document (PIECE), in memory bounded whatever its length.

Pure code (numpy, xxhash, and the compiled loops of simdb.kernels.compiled where they are loaded).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.errors import InvalidParameter
from simdb.kernels import Shingling
from simdb.sketch import short_text

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


_SPACES = (" ", "\n", "\t", "\r")  # where a text is cut into pieces (before one of them)


MAX_SHINGLE = 32


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

    @property
    def shingling(self) -> Shingling:
        """How the kernels make the shingles of a unit text of these (text) features."""
        return Shingling(self.kind == "char", ASCII_WORDS, self.n, SHINGLE_MULTIPLIER)

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


def check_bits(bits: int) -> int:
    """`bits` if it is a fingerprint width simdb makes (64 or 128), else InvalidParameter."""
    if bits not in WIDTHS:
        raise InvalidParameter(
            f"unknown fingerprint width {bits}", "use --bits 64 (the default) or --bits 128"
        )
    return bits


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


def overlapping(parts: Iterable[npt.NDArray[A]], n: int) -> Iterator[npt.NDArray[A]]:
    """The parts' concatenation again in pieces, each beginning with the last n - 1 elements of
    the one before, so that each window of n lies in exactly one piece and begins in it. (If
    there are fewer than n in all, one piece of them all.)"""
    carry: npt.NDArray[A] | None = None
    index = False
    for part in parts:
        window = part if carry is None or not len(carry) else np.concatenate([carry, part])
        if len(window) >= n:
            yield window
            index = True
            carry = window[len(window) - n + 1 :].copy()
        else:
            carry = window
    if not index and carry is not None and len(carry):
        yield carry


def byte_windows(content: Content, n: int) -> Iterator[npt.NDArray[np.uint8]]:
    """A document's bytes (text in UTF-8) in pieces that overlap by n - 1 (overlapping)."""
    return overlapping((np.frombuffer(raw, dtype=np.uint8) for raw in _raw_pieces(content)), n)


def shingle_pieces(units: Iterable[UInt64Array], n: int) -> Iterator[UInt64Array]:
    """Step 4 a piece at a time: the shingle hashes of the units' concatenation (the last n - 1
    units of a piece begin windows that end in the next)."""
    for window in overlapping(units, n):
        yield shingle_hashes(window, n)


def document_shingles(content: Content, features: Features) -> Pieces:
    """Steps 1-4 in pieces of bounded size: a function that yields the document's shingle
    hashes, from its start at each call (spec v2 may pass over a document more than once)."""
    if features.binary:
        n = features.n
        return lambda: (shingle_hashes(BYTE_HASHES[raw], n) for raw in byte_windows(content, n))
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


def without_kernels(texts: list[bytes]) -> bool:
    """Whether these unit texts are hashed in numpy (simdb.sketch.short_text) rather than by the compiled
    kernels: one short text in a process that has not loaded them (a query's start-up skips numba;
    the values are the same)."""
    return (
        len(texts) == 1 and len(texts[0]) <= short_text.LIMIT and "simdb.kernels.compiled" not in sys.modules
    )


Pieces = Callable[[], Iterable[UInt64Array]]  # shingle hashes in pieces, from the start at each call


# xxh3_64 of each single byte value: the unit hashes of bytes features.
BYTE_HASHES = np.array([xxhash.xxh3_64_intdigest(bytes([value])) for value in range(256)], dtype=np.uint64)
