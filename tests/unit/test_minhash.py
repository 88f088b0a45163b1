"""MinHash spec v1 and banding: the groundwork of the Jaccard mode, checked in pure Python."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reference import reference_band_keys, reference_check, reference_minhash

from simdb.errors import InvalidParameter
from simdb.sketch.bits import to_hex
from simdb.sketch.features import feature_hashes
from simdb.sketch.minhash import (
    CHECK_WORDS,
    Banding,
    check_similarity,
    check_words,
    choose_banding,
    document_signature,
    estimate,
    signature,
    similarity,
    sketch,
)

# Pinned: a change here is a new MinHash spec version.
KNOWN_SIGNATURE = [
    "0ba7c9ed70602264",
    "111dd76671f7e34c",
    "00ff537df2e1ba06",
    "02be99a4cfbd5356",
    "1102dc3fc28e296d",
    "1c9adec159051b65",
    "1a35d825a10168bc",
    "0b63aab5530bfbea",
]


def test_known_signature_and_band_keys() -> None:
    values = document_signature("The quick brown fox jumps over the lazy dog", permutations=8, spec=1)
    assert [to_hex(int(v)) for v in values] == KNOWN_SIGNATURE
    assert [to_hex(k) for k in Banding(2, 4).keys(values)] == ["f45dd7ee78233042", "f7d597d8c939e891"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=200), st.data())
def test_band_keys_equal_the_plain_reference(values: list[int], data: st.DataObject) -> None:
    rows = data.draw(st.integers(1, len(values)))
    bands = data.draw(st.integers(1, len(values) // rows))
    signature_values = np.array(values, dtype=np.uint64)
    assert Banding(bands, rows).keys(signature_values) == reference_band_keys(values, bands, rows)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 20), st.integers(1, 16), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_band_keys_of_many_signatures_equal_each_ones(count: int, bands: int, rows: int, seed: int) -> None:
    signatures = np.random.default_rng(seed).integers(0, 2**64, size=(count, 130), dtype=np.uint64)
    keys = Banding(bands, rows).keys_of(signatures)
    assert keys.shape == (count, bands)
    assert [row.tolist() for row in keys] == [
        reference_band_keys([int(v) for v in signature], bands, rows) for signature in signatures
    ]


@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=300), st.integers(1, 40))
def test_signature_equals_the_plain_reference(shingles: set[int], permutations: int) -> None:
    array = np.array(sorted(shingles), dtype=np.uint64)
    assert signature(array, permutations).tolist() == reference_minhash(shingles, permutations)


def test_estimate_tracks_jaccard() -> None:
    rng = random.Random(2)
    universe = [rng.getrandbits(64) for _ in range(4000)]
    for shared in (500, 1000, 1500):
        a = set(universe[:2000])
        b = set(universe[2000 - shared : 4000 - shared])
        jaccard = len(a & b) / len(a | b)
        sig_a = signature(np.array(sorted(a), dtype=np.uint64), 512)
        sig_b = signature(np.array(sorted(b), dtype=np.uint64), 512)
        assert abs(estimate(sig_a, sig_b) - jaccard) < 0.06  # binomial std <= 0.022 at 512 permutations


def test_near_copies_share_a_band() -> None:
    words = [f"w{i}" for i in range(400)]
    edited = list(words)
    edited[100] = "changed"
    banding = choose_banding(0.8, 128)
    keys_a = banding.keys(document_signature(" ".join(words)))
    keys_b = banding.keys(document_signature(" ".join(edited)))
    assert set(keys_a) & set(keys_b)
    sets = [set(feature_hashes(" ".join(w)).tolist()) for w in (words, edited)]
    assert len(sets[0] & sets[1]) / len(sets[0] | sets[1]) > 0.95


def test_banding_minimises_the_weighted_error() -> None:
    chosen = choose_banding(0.8, 128)
    assert chosen == Banding(16, 8)  # pinned: 16 bands of 8 rows for 0.8 and 128 permutations
    assert choose_banding(0.8, 128, false_positive_weight=0.5) == Banding(9, 13)  # the LSH libraries' choice
    assert chosen.bands * chosen.rows <= 128
    assert (
        chosen.probability(0.95) > 0.99 and chosen.probability(0.8) > 0.94 and chosen.probability(0.5) < 0.07
    )
    assert choose_banding(0.5, 128).rows < chosen.rows  # lower thresholds need shorter bands


@pytest.mark.parametrize(("threshold", "permutations"), [(0.0, 128), (1.0, 128), (0.8, 1), (0.8, 5000)])
def test_banding_refusals(threshold: float, permutations: int) -> None:
    with pytest.raises(InvalidParameter):
        choose_banding(threshold, permutations)


# Signature spec v2's check: (text, first word, last word, sha256 of the 64 little-endian words).
KNOWN_CHECKS = [
    (
        "The quick brown fox jumps over the lazy dog",
        "0340008400030001",
        "00c0020000000800",
        "a925ac2d30e490c1",
    ),
    (" ".join(f"w{i}" for i in range(2000)), "7ff8708b7e5b9bf6", "4eab942d422399eb", "3d24bc6a07711a6f"),
]


@pytest.mark.parametrize(("text", "first", "last", "digest"), KNOWN_CHECKS)
def test_known_checks(text: str, first: str, last: str, digest: str) -> None:
    hashes = feature_hashes(text)
    words = check_words(hashes)
    assert len(words) == CHECK_WORDS
    assert (to_hex(int(words[0])), to_hex(int(words[-1]))) == (first, last)
    assert hashlib.sha256(words.astype("<u8").tobytes()).hexdigest()[:16] == digest
    assert words.tolist() == reference_check(set(hashes.tolist()))
    # A v2 sketch is the v1 signature followed by the check.
    assert sketch(hashes, 128, spec=2).tolist() == signature(hashes, 128).tolist() + words.tolist()
    assert sketch(hashes, 128, spec=1).tolist() == signature(hashes, 128).tolist()


@settings(max_examples=8, deadline=None)  # the plain reference densifies slowly on small sets
@given(st.sets(st.integers(min_value=0, max_value=2**64 - 1), min_size=80, max_size=200))
def test_check_equals_the_plain_reference(shingles: set[int]) -> None:
    assert check_words(np.array(sorted(shingles), dtype=np.uint64)).tolist() == reference_check(shingles)


def test_check_tracks_jaccard_four_times_closer_than_the_signature() -> None:
    rng = random.Random(4)
    universe = [rng.getrandbits(64) for _ in range(8000)]
    check_errors, signature_errors = [], []
    for shared in range(2800, 4000, 60):
        a, b = set(universe[:4000]), set(universe[4000 - shared : 8000 - shared])
        jaccard = len(a & b) / len(a | b)
        sketches = [sketch(np.array(sorted(s), dtype=np.uint64), 128, spec=2) for s in (a, b)]
        check_errors.append(similarity(*sketches, permutations=128, spec=2) - jaccard)
        signature_errors.append(similarity(*sketches, permutations=128, spec=1) - jaccard)
    check_rms = float(np.sqrt(np.mean(np.square(check_errors))))
    signature_rms = float(np.sqrt(np.mean(np.square(signature_errors))))
    assert check_rms < 0.02 < signature_rms  # standard errors 0.009 and 0.035 at J = 0.8
    assert check_similarity(sketches[0][128:], sketches[0][128:]) == 1.0
