"""SimHash fingerprint specs: normalise, tokenise, shingle, hash with xxh3, weigh, fold to 64 or
128 bits.

Spec v1 weighs each shingle by its number of occurrences; spec v2 (the default for new indexes)
counts each distinct shingle once, so the fingerprint tracks the overlap of shingle sets
(Jaccard) and a few frequent shingles (markup, runs of zero bytes) cannot decide every bit.
Steps 1-4 are the same in both. A 128-bit fingerprint keeps the 64-bit one as its low half and
folds a second word per shingle, fmix64(hash XOR WIDE_KEY), into its high half.

Pure code (numpy, xxhash and the compiled loops of simdb.kernels), so it is fast to test and easy
to port; the README gives the spec step by step, tests pin it with known-answer vectors and
check it against a plain loop-by-loop reading of the spec.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.errors import InvalidParameter

SPEC_VERSIONS = (1, 2)
SPEC_VERSION = 2  # the newest, which new indexes use
WIDTHS = (64, 128)  # fingerprint widths in bits; 64 is the default
WORD = 64  # bits of one shingle hash

TOKEN_PATTERN = re.compile(r"\w+")
_HIGH_BYTE = re.compile(rb"[\x80-\xff]")  # a byte of a non-ASCII character in UTF-8
SHINGLE_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
WIDE_KEY = np.uint64(0x6A09E667F3BCC908)  # frac(sqrt(2)) * 2^64: the second word's hashes for 128 bits
FEATURE_KINDS = ("word", "char", "bytes")
BYTES_CHUNK = 1 << 22  # bytes features are counted in chunks of 4 MiB, so memory stays bounded
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


def normalize(text: str) -> str:
    """Step 1: Unicode NFKC, then case folding."""
    return unicodedata.normalize("NFKC", text).casefold()


def token_text(text: str) -> bytes:
    """Step 2: runs of word characters (Python's Unicode \\w) of the normalised text, as UTF-8,
    separated by spaces (runs of them; a token never holds one).

    Byte-level fast path, exact for any text: ASCII non-word characters become spaces and ASCII
    letters lower case; only the pieces holding non-ASCII characters (found by their bytes above
    0x7F, up to the ASCII separators around them) are normalised, case-folded and go through the
    regular expression. That is the same as normalising the whole text: NFKC has a boundary
    before every ASCII character (each is a starter that nothing before it composes with), so it
    works piece by piece, and a piece is normalised with the separator before it, which a
    combining mark can compose with ("<" and U+0338 make U+226E). Case folding maps character
    by character.
    """
    raw = text.encode("utf-8")
    spaced = raw.translate(ASCII_WORDS)
    if text.isascii():  # NFKC is the identity on ASCII and casefold is lower-casing
        return spaced
    parts: list[bytes] = []
    done = 0  # spaced[:done] is in parts
    while high := _HIGH_BYTE.search(spaced, done):
        start = spaced.rfind(b" ", 0, high.start()) + 1
        end = spaced.find(b" ", high.start())
        end = len(spaced) if end < 0 else end
        piece = unicodedata.normalize("NFKC", raw[max(start - 1, 0) : end].decode("utf-8"))
        parts += [spaced[done:start], " ".join(TOKEN_PATTERN.findall(piece.casefold())).encode("utf-8")]
        done = end
    parts.append(spaced[done:])
    return b"".join(parts)


def tokens(text: str) -> list[bytes]:
    """Step 2's tokens as a list (the fingerprint itself reads token_text)."""
    return token_text(text).split()


def shingle_hashes(unit_hashes: UInt64Array, n: int) -> UInt64Array:
    """Step 4: hash of each window of n units: acc = acc * K + u (mod 2^64), then fmix64.

    A document with fewer than n units forms one shingle of all its units.
    """
    from simdb import kernels  # (numba loads on the first fingerprint, not with the CLI)

    return kernels.shingles(unit_hashes, n, SHINGLE_MULTIPLIER)


def wide_bit_counts(hashes: UInt64Array, bits: int) -> npt.NDArray[np.int64]:
    """How many shingles have each of the `bits` bits set: word 0 is the shingle hash itself,
    word 1 (for 128 bits) is fmix64(hash XOR WIDE_KEY). Counted per byte value, then per bit."""
    from simdb import kernels

    histogram = kernels.byte_histogram(hashes, bits // WORD, WIDE_KEY)
    return (histogram.reshape(-1, 256) @ _BIT_TABLE).ravel()


def fold(ones: npt.NDArray[np.int64], total: int) -> int:
    """Bit i is 1 exactly when more than half of the `total` occurrences have it set (any width
    that is a multiple of 8 bits)."""
    return int.from_bytes(np.packbits(2 * ones > total, bitorder="little").tobytes(), "little")


def _fold_occurrences(chunks: Iterable[UInt64Array], bits: int) -> int:
    """Spec v1, step 5: bit i is 1 exactly when more shingle occurrences have it set than clear.

    Every occurrence adds +1 where its hash has a 1 and -1 where it has a 0, which is the
    same as weighting each distinct shingle by its number of occurrences.
    """
    ones = np.zeros(bits, dtype=np.int64)
    total = 0
    for hashes in chunks:
        ones += wide_bit_counts(hashes, bits)
        total += len(hashes)
    return fold(ones, total)


def _fold_distinct(chunks: Iterable[UInt64Array], bits: int) -> int:
    """Spec v2, step 5: bit i is 1 exactly when more distinct shingles have it set than clear."""
    from simdb import kernels

    parts = [kernels.distinct(hashes) for hashes in chunks]
    distinct = parts[0] if len(parts) == 1 else kernels.distinct(np.concatenate(parts))
    return fold(wide_bit_counts(distinct, bits), len(distinct))


_FOLDS: dict[int, Callable[[Iterable[UInt64Array], int], int]] = {1: _fold_occurrences, 2: _fold_distinct}


def check_spec(spec: int) -> int:
    """`spec` if this simdb computes fingerprints of that spec version, else InvalidParameter."""
    if spec not in _FOLDS:
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
    """Step 5: the `bits`-bit fingerprint of a document's shingle hashes, under fingerprint spec `spec`."""
    return _FOLDS[check_spec(spec)]([hashes], check_bits(bits))


# xxh3_64 of each single byte value: the unit hashes of bytes features.
_BYTE_HASHES = np.array([xxhash.xxh3_64_intdigest(bytes([value])) for value in range(256)], dtype=np.uint64)


def _byte_shingle_chunks(data: bytes, n: int) -> Iterator[UInt64Array]:
    """The byte n-gram hashes of `data`, in chunks of BYTES_CHUNK overlapping by n - 1 bytes."""
    size = min(n, len(data))
    for start in range(0, max(1, len(data) - size + 1), BYTES_CHUNK):
        chunk = np.frombuffer(
            data, dtype=np.uint8, count=min(BYTES_CHUNK + size - 1, len(data) - start), offset=start
        )
        yield shingle_hashes(_BYTE_HASHES[chunk], size)


def fingerprint_bytes(data: bytes, n: int = 4, spec: int = SPEC_VERSION, bits: int = 64) -> int:
    """SimHash of raw content with bytes:N features (byte n-grams), for any file, text or not.

    Units are the bytes; unit hash = xxh3_64 of the single byte; shingles and the fold are as
    for text. Hashed in chunks, so a large file needs memory for its distinct n-grams only (v2)
    or for one chunk (v1).
    """
    if not data:
        raise EmptyDocument("the file is empty")
    return _FOLDS[check_spec(spec)](_byte_shingle_chunks(data, n), check_bits(bits))


def feature_hashes(content: str | bytes, features: Features = DEFAULT_FEATURES) -> UInt64Array:
    """Steps 1-4: the 64-bit hash of every shingle occurrence of a document, in order.

    For bytes features the units are the raw bytes, or the bytes of a text in UTF-8.
    """
    if features.binary:
        raw = content.encode("utf-8") if isinstance(content, str) else content
        data = np.frombuffer(raw, dtype=np.uint8)
        if len(data) == 0:
            raise EmptyDocument("the document is empty")
        return shingle_hashes(_BYTE_HASHES[data], features.n)
    from simdb import kernels

    text = unit_text(content, features)
    units = kernels.char_units(text) if features.kind == "char" else kernels.word_units(text, ASCII_WORDS)
    if len(units) == 0:
        raise EmptyDocument("the document has no word characters")
    return shingle_hashes(units, features.n)


def unit_text(content: str | bytes, features: Features) -> bytes:
    """Steps 1-2 for text features: the UTF-8 bytes the kernels take units from (mapped through
    ASCII_WORDS by the kernel for word features). Word features get ASCII text as it is (so the
    mapping runs outside the GIL); char features get the tokens joined by single spaces."""
    if isinstance(content, bytes):
        raise TypeError("text features need text, not bytes")
    if features.kind == "char":
        return b" ".join(token_text(content).split())
    return content.encode() if content.isascii() else token_text(content)


def fingerprint(
    content: str | bytes, features: Features = DEFAULT_FEATURES, spec: int = SPEC_VERSION, bits: int = 64
) -> int:
    """The unsigned `bits`-bit SimHash (64 or 128) of a document under fingerprint spec `spec` (v2
    by default); raises EmptyDocument if it has no shingles.

    Text goes through the features; raw bytes (a file read for bytes:N) need bytes features,
    and bytes features take text as its UTF-8 bytes.
    """
    if features.binary:
        raw = content.encode("utf-8") if isinstance(content, str) else content
        return fingerprint_bytes(raw, features.n, spec, bits)
    found = fingerprints([content], features, spec, bits)[0]
    if found is None:
        raise EmptyDocument("the document has no word characters")
    return found


def fingerprints(
    contents: Sequence[str | bytes],
    features: Features = DEFAULT_FEATURES,
    spec: int = SPEC_VERSION,
    bits: int = 64,
) -> list[int | None]:
    """fingerprint() of each document, None where it has no shingles.

    Text features take one compiled call for all the documents (steps 3-5), which runs outside
    the GIL: threads that each fingerprint a part of a batch use every core.
    """
    if features.binary:
        return [or_none(fingerprint, content, features, spec, bits) for content in contents]
    from simdb import kernels

    ones, totals = kernels.bit_counts(
        [unit_text(content, features) for content in contents],
        features.kind == "char",
        ASCII_WORDS,
        features.n,
        SHINGLE_MULTIPLIER,
        check_spec(spec) == 2,  # v2 counts each distinct shingle once, v1 every occurrence
        check_bits(bits) // WORD,
        WIDE_KEY,
    )
    majority = np.packbits(2 * ones > totals[:, None], axis=1, bitorder="little")  # step 5, row by row
    return [
        int.from_bytes(row.tobytes(), "little") if total else None
        for row, total in zip(majority, totals, strict=True)
    ]


def or_none(function: Callable[..., T], *arguments: object) -> T | None:
    """function(*arguments), or None where the document has no shingles (EmptyDocument)."""
    try:
        return function(*arguments)
    except EmptyDocument:
        return None
