"""MinHash signature specs v1 and v2 and LSH banding for the Jaccard mode (pure code: numpy and xxhash).

A document's feature set is the set of its distinct shingle hashes (the same shingles as
SimHash, steps 1-4 of its spec). Permutation i maps a shingle hash x to fmix64(x XOR seed_i) with
seed_i = xxh3_64 of i as 4 little-endian bytes; the signature holds, for each permutation, the
minimum over the set. Two signatures agree at a position with probability equal to the Jaccard
similarity of the sets, so the share of equal positions estimates it. The signature is cut into
b bands of r rows; band j's key is the XOR of its r values, value i rotated left by 17 * i mod 64
bits. Shifts and XOR are all it takes, so PostgreSQL computes the same keys from a stored
signature (generated columns), and an equal band always gives an equal key. Two documents
whose Jaccard is s share at least one band with probability 1 - (1 - s^r)^b.

Signature spec v2 (the default for new indexes) appends a check that only verification reads:
one-permutation MinHash over CHECK_BINS bins with optimal densification (Shrivastava 2017), one
bit per bin (b-bit minwise hashing, Li and König 2010), packed into CHECK_WORDS 64-bit words.
Two checks agree on a bin's bit with probability J + (1 - J) / 2, so 1 - (differing bits) / 2048
estimates J with a standard error of 0.009 at J = 0.8, where 128 signature positions give 0.035.

Signature spec v3 (the default for indexes simdb makes) keeps v2's check but, in place of the
signature, its band keys: once the check verifies, the signature serves only to key the bands,
so a v3 sketch is 16 + 64 words where v2's is 128 + 64, and each band's B-tree is on one stored
value rather than on 8 values shifted and XORed. Its keys belong to one banding (the index's
threshold and permutations); a column of an application's table, which several indexes may read,
keeps v2 sketches (COLUMN_SIGNATURE_SPEC).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from simdb.errors import InvalidParameter
from simdb.sketch.features import (
    DEFAULT_FEATURES,
    Content,
    EmptyDocument,
    Features,
    document_shingles,
    empty,
    sorted_out,
)

SIGNATURE_SPECS = (1, 2, 3)
MINHASH_SPEC_VERSION = 3  # the newest signature spec, which new indexes use
COLUMN_SIGNATURE_SPEC = 2  # an application's column: sketches that no one index's bands shape
KEYED_SPEC = 3  # the spec whose sketch starts with the band keys instead of the signature
CHECK_BINS = 4096
CHECK_WORDS = CHECK_BINS // 64
EXTRA_WORDS = {
    1: 0,
    2: CHECK_WORDS,
    3: CHECK_WORDS,
}  # 64-bit words a sketch holds after its signature or keys
_CHECK_SEED = np.uint64(0x243F6A8885A308D3)  # the check's permutation: fmix64(x XOR seed)
_PROBE_SEED = np.uint64(0x13198A2E03707344)  # densification: where an empty bin looks
_BIT_SEED = np.uint64(0xA4093822299F31D0)  # the bit kept of a bin's minimum
_MAX_PROBES = 256  # then a tiny set's empty bin takes the next filled one
DEFAULT_PERMUTATIONS = 128
DEFAULT_THRESHOLD = 0.8
# LSH libraries weigh both errors alike (0.5), which gives 9 bands of 13 rows at 0.8 and 128
# permutations: only 40% of the pairs at exactly 0.8 share a band. simdb verifies every candidate
# in SQL, so a false positive costs one comparison while a false negative is lost. Weighing false
# positives 0.1 gave 14 bands of 9 rows (87% at 0.8), which took recall on the Python standard
# library with planted word edits from 0.84 to 0.94. With signature spec v2's check (four times
# finer than the signature), 0.05 gives 16 bands of 8 (95% at 0.8): recall 0.949 -> 0.961 for
# precision 0.976 -> 0.972 on that corpus, 0.920 -> 0.933 on another.
FALSE_POSITIVE_WEIGHT = 0.05

UInt64Array = npt.NDArray[np.uint64]


def to_stored(values: npt.ArrayLike) -> list[int]:
    """A signature as PostgreSQL stores it: bigint[] of the same bits (signed two's complement)."""
    return [int(v) for v in np.asarray(values, dtype=np.uint64).view(np.int64).tolist()]


def from_stored(values: npt.ArrayLike) -> UInt64Array:
    """A stored bigint[] signature back as unsigned 64-bit values."""
    return np.asarray(values, dtype=np.int64).view(np.uint64)


def band_rotation(row: int) -> int:
    """Bits by which the row-th value of a band is rotated left before the XOR."""
    return (17 * row) % 64


@functools.cache
def seeds(permutations: int) -> UInt64Array:
    """seed_i = xxh3_64(i as 4 little-endian bytes), for i = 0..permutations-1 (computed once; read-only)."""
    values = np.array(
        [xxhash.xxh3_64_intdigest(i.to_bytes(4, "little")) for i in range(permutations)], dtype=np.uint64
    )
    values.flags.writeable = False
    return values


def signature(shingles: UInt64Array, permutations: int = DEFAULT_PERMUTATIONS) -> UInt64Array:
    """The MinHash signature of a set of shingle hashes (duplicates do not matter)."""
    if len(shingles) == 0:
        raise EmptyDocument("the document has no shingles")
    from simdb.kernels import compiled as kernels  # (numba loads on the first signature, not with the CLI)

    # each value once: the hash set costs far less than the permutations of a repeated value
    return kernels.minima(kernels.distinct(shingles), seeds(permutations))


def document_signature(
    content: Content,
    features: Features = DEFAULT_FEATURES,
    permutations: int = DEFAULT_PERMUTATIONS,
    spec: int = COLUMN_SIGNATURE_SPEC,
    threshold: float = DEFAULT_THRESHOLD,
) -> UInt64Array:
    """A document's sketch as a jaccard index of signature spec `spec` stores it (v2, the
    default, as an application's column keeps it: the signature, then the check; v3: the band
    keys for `threshold`, then the check); raises EmptyDocument if it has no shingles."""
    found = document_signatures([content], features, permutations, spec, threshold)[0]
    if found is None:
        raise empty(features)
    return found


def document_signatures(
    contents: Sequence[Content],
    features: Features = DEFAULT_FEATURES,
    permutations: int = DEFAULT_PERMUTATIONS,
    spec: int = COLUMN_SIGNATURE_SPEC,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[UInt64Array | None]:
    """document_signature() of each document, None where it has no shingles. Text features take
    one compiled call for all of them, outside the GIL (see simhash.fingerprints); bytes
    features, long texts and streams are sketched a piece at a time (_sketch_of_pieces)."""
    bins = CHECK_BINS if check_signature_spec(spec) != 1 else 0  # v1 has no check
    found, whole, texts = sorted_out(
        contents,
        features,
        lambda content: _sketch_of_pieces(document_shingles(content, features)(), permutations, spec),
    )
    if whole:
        from simdb.kernels import compiled as kernels

        values, present = kernels.signatures(
            texts,
            features.shingling,
            seeds(permutations),
            (bins, _CHECK_SEED, _PROBE_SEED, _BIT_SEED, _MAX_PROBES),
            _probe_index(),
        )
        for at, row, has in zip(whole, values, present, strict=True):
            found[at] = row if has else None
    if spec != KEYED_SPEC:
        return found
    return [None if value is None else keyed(value, permutations, threshold) for value in found]


def keyed(sketch_v2: UInt64Array, permutations: int, threshold: float) -> UInt64Array:
    """Signature spec v3 of a v2 sketch: the band keys of the signature for `threshold`, then
    the same check."""
    keys = choose_banding(threshold, permutations).keys_of(sketch_v2[None, :permutations])[0]
    return np.concatenate([keys, sketch_v2[permutations:]])


def sketch_size(spec: int, permutations: int, banding: Banding) -> int:
    """Values of a sketch of signature spec `spec`: the signature (v1), then the check (v2), or
    the band keys, then the check (v3)."""
    lead = banding.bands if check_signature_spec(spec) == KEYED_SPEC else permutations
    return lead + EXTRA_WORDS[spec]


def _sketch_of_pieces(pieces: Iterable[UInt64Array], permutations: int, spec: int) -> UInt64Array | None:
    """The sketch of the set of all the pieces' shingle hashes, one piece at a time (None: no
    shingles). The same as the whole set's: a signature value is a minimum over the set, which
    is the least of the pieces' minima, and so is each bin of the check."""
    from simdb.kernels import compiled as kernels

    values: UInt64Array | None = None
    least = np.zeros(CHECK_BINS, dtype=np.uint64)
    full = np.zeros(CHECK_BINS, dtype=np.bool_)
    for hashes in pieces:
        # each value once: the hash set costs far less than the permutations of a repeated value
        distinct = kernels.distinct(hashes)
        minima = kernels.minima(distinct, seeds(permutations))
        values = minima if values is None else np.minimum(values, minima)
        if spec != 1:
            kernels.check_bins(distinct, least, full, _CHECK_SEED)
    if values is None or spec == 1:
        return values
    bits = kernels.check_finish(least, full, _PROBE_SEED, _BIT_SEED, _MAX_PROBES, _probe_index())
    return np.concatenate([values, _packed(bits)])


def _packed(bits: npt.NDArray[np.uint8]) -> UInt64Array:
    """One byte (0 or 1) per bin, as the check's 64-bit words: bin i is bit i % 64 of word i // 64."""
    return np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64)


def check_words(shingles: UInt64Array) -> UInt64Array:
    """Signature spec v2's check of a set of shingle hashes: CHECK_BINS one-bit minima, packed.

    1. Each distinct shingle x is mapped to g = fmix64(x XOR _CHECK_SEED); its bin is the top
       12 bits of g, and a bin's value is the least g in it.
    2. An empty bin i takes the value of the first non-empty bin among j_t = top 12 bits of
       fmix64((i << 32 | t) XOR _PROBE_SEED) for t = 0 .. 255 (optimal densification: two sets
       agree on any bin with probability equal to their Jaccard similarity), or, if none of
       those is filled (sets of a few dozen shingles), of the next non-empty bin after i,
       counting on from the last bin to bin 0.
    3. Bit i of the check is the lowest bit of fmix64(value of bin i XOR _BIT_SEED); bit i is
       bit i % 64 of word i // 64.
    """
    if len(shingles) == 0:
        raise EmptyDocument("the document has no shingles")
    from simdb.kernels import compiled as kernels

    probes = _probe_index()
    return _packed(
        kernels.check_bits(shingles, CHECK_BINS, _CHECK_SEED, _PROBE_SEED, _BIT_SEED, _MAX_PROBES, probes)
    )


@functools.cache
def _probe_index() -> tuple[Any, Any, Any]:
    """Where every bin's densification probes land, inverted (kernels.probe_index), made once."""
    from simdb.kernels import compiled as kernels

    return kernels.probe_index(CHECK_BINS, _MAX_PROBES, _PROBE_SEED)


def check_similarity(a: UInt64Array, b: UInt64Array) -> float:
    """The Jaccard similarity two checks estimate: 1 - differing bits / (CHECK_BINS / 2), at least 0."""
    differing = int(np.bitwise_count(a ^ b).sum())
    return max(0.0, 1.0 - differing / (CHECK_BINS // 2))


def sketch(
    shingles: UInt64Array,
    permutations: int = DEFAULT_PERMUTATIONS,
    spec: int = COLUMN_SIGNATURE_SPEC,
    threshold: float = DEFAULT_THRESHOLD,
) -> UInt64Array:
    """A set's sketch under signature spec `spec`: its signature (v1), then its check (v2, the
    default: its signature keys the bands of any threshold); its band keys for `threshold`, then
    its check (v3)."""
    found = _sketch_of_pieces([shingles], permutations, check_signature_spec(spec))
    if found is None:
        raise EmptyDocument("the document has no shingles")
    if spec == KEYED_SPEC:
        return keyed(found, permutations, threshold)
    return found


def similarity(a: UInt64Array, b: UInt64Array, permutations: int, spec: int = MINHASH_SPEC_VERSION) -> float:
    """The Jaccard similarity two sketches estimate: equal signature positions (v1), the check,
    their last CHECK_WORDS values (v2, v3)."""
    if check_signature_spec(spec) == 1:
        return estimate(a, b)
    return check_similarity(a[-CHECK_WORDS:], b[-CHECK_WORDS:])


def check_signature_spec(spec: int) -> int:
    """`spec` if this simdb makes signatures of that spec version, else InvalidParameter."""
    if spec not in SIGNATURE_SPECS:
        raise InvalidParameter(
            f"unknown signature spec {spec}", f"use one of {', '.join(map(str, SIGNATURE_SPECS))}"
        )
    return spec


def estimate(a: UInt64Array, b: UInt64Array) -> float:
    """Estimated Jaccard similarity: the share of positions where two signatures agree."""
    if a.shape != b.shape:
        raise InvalidParameter(
            "signatures of different lengths", "compare signatures made with the same settings"
        )
    return float(np.count_nonzero(a == b)) / len(a)


@dataclass(frozen=True)
class Banding:
    """b bands of r rows each (b * r <= permutations) for a similarity threshold."""

    bands: int
    rows: int

    def keys(self, signature_values: UInt64Array) -> list[int]:
        """The unsigned 64-bit key of each band of a signature."""
        return [int(key) for key in self.keys_of(np.asarray(signature_values, dtype=np.uint64)[None])[0]]

    def keys_of(self, signatures: UInt64Array) -> UInt64Array:
        """The band keys of each row of a 2-D array of signatures, shape (rows, bands): the
        values of a band rotated left by band_rotation of their place in it, then XORed."""
        used = self.bands * self.rows
        bands = signatures[:, :used].reshape(len(signatures), self.bands, self.rows)
        shifts = np.array([band_rotation(i) for i in range(self.rows)], dtype=np.uint64)
        rotated = (bands << shifts) | (bands >> ((64 - shifts) % 64))  # a rotation by 0 is v | v
        keys: UInt64Array = np.bitwise_xor.reduce(rotated, axis=2)
        return keys

    def probability(self, similarity: float) -> float:
        """Chance that two documents with this Jaccard similarity share at least one band key."""
        return float(1 - (1 - similarity**self.rows) ** self.bands)


def _false_positive_area(threshold: float, bands: int, rows: int) -> float:
    s = np.linspace(0.0, threshold, 201)
    return float(np.trapezoid(1 - (1 - s**rows) ** bands, s))


def _false_negative_area(threshold: float, bands: int, rows: int) -> float:
    s = np.linspace(threshold, 1.0, 201)
    return float(np.trapezoid((1 - s**rows) ** bands, s))


@functools.cache  # (some 20 ms of integrals; a v3 sketch asks for its index's banding each time)
def choose_banding(
    threshold: float = DEFAULT_THRESHOLD,
    permutations: int = DEFAULT_PERMUTATIONS,
    false_positive_weight: float = FALSE_POSITIVE_WEIGHT,
) -> Banding:
    """The (b, r) with b * r <= permutations minimising the weighted false positive and false
    negative probabilities, integrated over similarity below and above the threshold."""
    if not 0.0 < threshold < 1.0:
        raise InvalidParameter(
            f"threshold {threshold} is outside (0, 1)", "use a Jaccard threshold such as 0.8"
        )
    if not 2 <= permutations <= 1024:
        raise InvalidParameter(f"{permutations} permutations is out of range", "use 2 to 1024, e.g. 128")

    def error(banding: Banding) -> float:
        return false_positive_weight * _false_positive_area(threshold, banding.bands, banding.rows) + (
            1 - false_positive_weight
        ) * _false_negative_area(threshold, banding.bands, banding.rows)

    options = [Banding(b, r) for b in range(1, permutations + 1) for r in range(1, permutations // b + 1)]
    return min(options, key=lambda banding: (error(banding), banding.bands))
