"""One-bit MinHash fingerprint spec v1: known answers, the spec read loop by loop, and
the law that a bit differs with probability about (1 - J) / 2; and fingerprint spec v3 of the
simhash mode, which is that fingerprint at 64 bits (seed 0) and 128 bits (seeds 0 and 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reference import reference_minhash

from simdb.errors import InvalidParameter
from simdb.measure.edits import reflowed
from simdb.sketch.features import DEFAULT_FEATURES, EmptyDocument, Features, feature_hashes
from simdb.sketch.minhash import signature
from simdb.sketch.onebit import BITS, from_minima, onebit, onebit_fingerprint
from simdb.sketch.simhash import fingerprint, fingerprints, simhash

TEXTS = [
    "The quick brown fox jumps over the lazy dog",
    "Near-duplicate search that lives in PostgreSQL: SimHash fingerprints in permuted block B-trees.",
    "Ünïcödé Straße — naïve café, ﬁne ligatures; ΣΊΣΥΦΟΣ",
]
BYTES = bytes(range(256)) * 3 + b"\x00\x01 simdb"

# Pinned: a change here is a new one-bit MinHash spec version.
KNOWN = {
    (TEXTS[0], 0): 0xBB1CE4E62564CB30,
    (TEXTS[0], 1): 0xCFEAD033252721EC,
    (TEXTS[1], 0): 0x811FE95EB4FA6A37,
    (TEXTS[1], 1): 0x999662FF236D4534,
    (TEXTS[2], 0): 0x0F9F480CC0755DAF,
    (TEXTS[2], 1): 0x7692FE7777DA76C8,
}
KNOWN_BYTES = 0x837D5B490BF653DA  # BYTES, bytes:4 features, seed 0

# Fingerprint spec v3 (pinned: a change here is a new fingerprint spec version): 64 bits are seed
# 0's one-bit MinHash, 128 bits the lowest bits of MinHash values 0..127 (seed 1's in the high half).
KNOWN_SPEC3 = {
    (TEXTS[0], 64): 0xBB1CE4E62564CB30,
    (TEXTS[0], 128): 0xCFEAD033252721EC_BB1CE4E62564CB30,
    (TEXTS[1], 64): 0x811FE95EB4FA6A37,
    (TEXTS[1], 128): 0x999662FF236D4534_811FE95EB4FA6A37,
    (TEXTS[2], 64): 0x0F9F480CC0755DAF,
    (TEXTS[2], 128): 0x7692FE7777DA76C8_0F9F480CC0755DAF,
}
KNOWN_SPEC3_BYTES = 0xFFBA6E5D09139FCB_837D5B490BF653DA  # BYTES, bytes:4 features, 128 bits
KNOWN_SPEC3_CHARS = 0x122BFC36570D3589_45E9AD92D50F2AA9  # TEXTS[1], char:5 features, 128 bits


def _reference(shingles: set[int], seed: int) -> int:
    """The spec loop by loop: bit j is the lowest bit of MinHash value 64 * seed + j."""
    values = reference_minhash(shingles, BITS * (seed + 1))[BITS * seed :]
    return sum((value & 1) << j for j, value in enumerate(values))


def test_known_answers() -> None:
    for (text, seed), expected in KNOWN.items():
        assert onebit_fingerprint(text, seed=seed) == expected
    assert onebit_fingerprint(BYTES, Features("bytes", 4)) == KNOWN_BYTES


def test_known_answers_equal_the_plain_reading_of_the_spec() -> None:
    for (text, seed), expected in KNOWN.items():
        assert _reference(set(feature_hashes(text).tolist()), seed) == expected
    shingles = set(feature_hashes(BYTES, Features("bytes", 4)).tolist())
    assert _reference(shingles, 0) == KNOWN_BYTES


def test_spec3_known_answers() -> None:
    for (text, bits), expected in KNOWN_SPEC3.items():
        assert fingerprint(text, spec=3, bits=bits) == expected
    assert fingerprint(BYTES, Features("bytes", 4), spec=3, bits=128) == KNOWN_SPEC3_BYTES
    assert fingerprint(TEXTS[1], Features("char", 5), spec=3, bits=128) == KNOWN_SPEC3_CHARS


def test_spec3_is_the_plain_reading_of_the_spec_at_both_widths() -> None:
    """Bit i is the lowest bit of MinHash value i: seed 0's fingerprint, then seed 1's."""
    cases = [(text, DEFAULT_FEATURES) for text in TEXTS] + [
        (BYTES, Features("bytes", 4)),
        (TEXTS[1], Features("char", 5)),
    ]
    for content, features in cases:
        shingles = set(feature_hashes(content, features).tolist())
        low, high = _reference(shingles, 0), _reference(shingles, 1)
        assert fingerprint(content, features, spec=3) == low
        assert fingerprint(content, features, spec=3, bits=128) == low | high << 64
    assert KNOWN_SPEC3[(TEXTS[0], 128)] == KNOWN[(TEXTS[0], 0)] | KNOWN[(TEXTS[0], 1)] << 64


def test_spec3_of_a_batch_equals_each_document_alone() -> None:
    """One compiled call for short texts, pieces for a long one, None for no words: the same
    fingerprints as onebit_fingerprint of each document."""
    rng = np.random.default_rng(3)
    long_text = " ".join(f"w{value}" for value in rng.integers(0, 50_000, size=400_000))
    batch = [*TEXTS, long_text, TEXTS[0] + " and one more word"]
    for bits in (64, 128):
        found = fingerprints([*batch, "  ... !!! "], spec=3, bits=bits)
        assert found[-1] is None
        for content, value in zip(batch, found, strict=False):
            low = onebit_fingerprint(content)
            assert value == (low if bits == 64 else low | onebit_fingerprint(content, seed=1) << 64)


def test_spec3_is_no_simhash_of_hashes() -> None:
    with pytest.raises(InvalidParameter, match="fingerprint spec 3 is not a SimHash"):
        simhash(feature_hashes(TEXTS[0]), spec=3)


def test_seeds_0_and_1_are_the_lowest_bits_of_the_jaccard_signature() -> None:
    hashes = feature_hashes(" ".join(TEXTS * 5) + " and some more words to shingle")
    values = signature(hashes, 2 * BITS)
    assert onebit(hashes, 0) == from_minima(values[:BITS])
    assert onebit(hashes, 1) == from_minima(values[BITS:])


def test_a_long_text_hashed_in_pieces_gives_the_whole_set_fingerprint() -> None:
    rng = np.random.default_rng(5)
    text = " ".join(f"w{value}" for value in rng.integers(0, 50_000, size=400_000))
    assert len(text) > 1 << 20  # more than one PIECE
    assert onebit_fingerprint(text) == onebit(feature_hashes(text))


def test_errors_name_the_input() -> None:
    with pytest.raises(EmptyDocument):
        onebit_fingerprint("  ... --- !!! ")
    with pytest.raises(InvalidParameter, match="seed -1 is out of range"):
        onebit_fingerprint(TEXTS[0], seed=-1)
    with pytest.raises(InvalidParameter, match="3 MinHash values given"):
        from_minima(np.zeros(3, dtype=np.uint64))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "Eps", "zeta"]), min_size=1, max_size=60))
def test_identical_documents_give_identical_fingerprints(words: list[str]) -> None:
    text = " ".join(words)
    expected = onebit_fingerprint(text)
    assert onebit_fingerprint(str(text)) == expected
    assert onebit_fingerprint(text.upper().replace(" ", "\n  ")) == expected  # the same shingles
    assert onebit(np.concatenate([feature_hashes(text)] * 3)) == expected  # repeats do not count


def test_reflowed_text_has_the_same_fingerprint() -> None:
    import random

    text = "\n".join(TEXTS[:2] * 4)
    assert onebit_fingerprint(reflowed(random.Random(1), text)) == onebit_fingerprint(text)


def test_differing_bits_approximate_half_of_one_minus_jaccard() -> None:
    # Pairs of random 150-word documents, the second with a share of words replaced, so that
    # Jaccard spreads from about 0.2 to 1. Given the two sets, each of the 64 bits differs
    # independently with probability p = (1 - J) / 2 (up to the chance that two different
    # minima share their lowest bit, which is 1/2 for well-mixed values), so the differing bits
    # of a group of pairs are a sum of Bernoulli(p) with mean sum(64 p) and variance
    # sum(64 p (1 - p)): each group must land within 4.5 standard deviations of its mean.
    rng = np.random.default_rng(40)
    vocabulary = [f"v{number}" for number in range(5000)]
    groups: dict[str, list[tuple[float, int]]] = {"J < 0.6": [], "0.6 <= J < 0.9": [], "J >= 0.9": []}
    for _ in range(600):
        words = list(rng.choice(vocabulary, size=150))
        other = list(words)
        changed = int(rng.integers(0, 40)) if rng.random() < 0.6 else int(rng.integers(0, 5))
        for place in rng.choice(150, size=changed, replace=False):
            other[place] = str(rng.choice(vocabulary))
        a, b = set(feature_hashes(" ".join(words)).tolist()), set(feature_hashes(" ".join(other)).tolist())
        similarity = len(a & b) / len(a | b)
        distance = (onebit_fingerprint(" ".join(words)) ^ onebit_fingerprint(" ".join(other))).bit_count()
        name = "J < 0.6" if similarity < 0.6 else "0.6 <= J < 0.9" if similarity < 0.9 else "J >= 0.9"
        groups[name].append((similarity, distance))
    for name, pairs in groups.items():
        assert len(pairs) >= 50, name
        p = np.array([(1 - similarity) / 2 for similarity, _ in pairs])
        mean, variance = float(BITS * p.sum()), float(BITS * (p * (1 - p)).sum())
        observed = sum(distance for _, distance in pairs)
        assert abs(observed - mean) <= 4.5 * math.sqrt(variance), (name, observed, mean, variance)
