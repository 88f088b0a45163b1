"""The default index finds single edits, and says what it finds: simdb.plan.reach's model, the words
of `create`, `list` and `ingest --create`, and `query`'s word on a row beyond reach."""

from __future__ import annotations

import math

import pytest

from simdb.index.modes import SimhashSpec
from simdb.plan import reach
from simdb.sketch.features import Features
from simdb.sketch.simhash import (
    DEFAULT_MAX_DISTANCE,
    FINGERPRINT_METHODS,
    NEW_INDEX_SPEC,
    SPEC_VERSION,
)

ONEBIT = FINGERPRINT_METHODS[3].bit_difference
SIMHASH = FINGERPRINT_METHODS[2].bit_difference


def _binomial_cdf(n: int, k: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed the slow way with fractions of factorials."""
    total = 0.0
    for i in range(k + 1):
        total += math.factorial(n) / (math.factorial(i) * math.factorial(n - i)) * p**i * (1 - p) ** (n - i)
    return total


def test_found_is_the_binomial_chance_of_k_bits_or_fewer() -> None:
    for bits, k, p in ((64, 5, 0.05), (64, 3, 0.2), (128, 10, 0.1)):
        assert reach.found(bits, k, p) == pytest.approx(_binomial_cdf(bits, k, p), rel=1e-12)
    assert reach.found(64, 64, 0.3) == pytest.approx(1.0)


def test_the_bit_difference_of_each_fingerprint_kind() -> None:
    assert ONEBIT(1.0) == 0.0 and ONEBIT(0.0) == 0.5 and ONEBIT(0.9) == pytest.approx(0.05)
    assert SIMHASH(1.0) == 0.0 and SIMHASH(0.0) == pytest.approx(0.5)
    # near J = 0.95 a SimHash bit differs two to three times as often as a one-bit MinHash bit
    assert 2 < SIMHASH(0.95) / ONEBIT(0.95) < 3


def test_jaccard_found_is_where_nine_in_ten_pairs_are_within_k() -> None:
    j = reach.jaccard_found(64, 5, ONEBIT)
    assert reach.found(64, 5, ONEBIT(j)) == pytest.approx(reach.SHARE, abs=1e-6)
    assert reach.found(64, 5, ONEBIT(j - 0.01)) < reach.SHARE
    # a larger k reaches lower; SimHash at k = 3 reaches only very close copies
    assert reach.jaccard_found(64, 6, ONEBIT) < j < reach.jaccard_found(64, 4, ONEBIT)
    assert reach.jaccard_found(64, 3, SIMHASH) > 0.98


def test_jaccard_at_inverts_the_expected_distance() -> None:
    for j in (0.6, 0.8, 0.95):
        assert reach.jaccard_at(64, 64 * ONEBIT(j), ONEBIT) == pytest.approx(j, abs=1e-6)  # type: ignore[arg-type]
    assert reach.jaccard_at(64, 32, ONEBIT) == 0.0
    assert reach.jaccard_at(64, 40, SIMHASH) == 0.0


def test_the_document_size_one_changed_line_needs() -> None:
    # 10 words replaced change 12 word 3-grams; J = (N - 12) / (N + 12) at N = 12 * 1.9 / 0.1
    assert reach.line_changed_bytes(0.9, 3) == pytest.approx(12 * 1.9 / 0.1 * reach.WORD_BYTES)
    assert reach.line_changed_bytes(1.0, 3) == math.inf
    said = reach.of(64, 5, ONEBIT, 3).words()
    assert said == "finds 9 in 10 copies at Jaccard >= 0.90 (a changed line in documents over 1.4 KB)"
    assert reach.of(64, 5, ONEBIT, None).words() == "finds 9 in 10 copies at Jaccard >= 0.90"


def test_the_default_is_one_bit_minhash_within_five_bits() -> None:
    assert (NEW_INDEX_SPEC, DEFAULT_MAX_DISTANCE) == (3, 5)
    assert FINGERPRINT_METHODS[NEW_INDEX_SPEC].name == "one-bit MinHash"
    # the library's default stays SimHash, so that code and migrations keep their meaning
    assert SPEC_VERSION == 2 and SimhashSpec().build("x", Features(), 1000).summary.startswith(
        "64-bit SimHash, max distance 3"
    )
    assert (
        SimhashSpec.newest()
        .build("x", Features(), 1000)
        .summary.startswith("64-bit one-bit MinHash, max distance 5")
    )
    assert SimhashSpec.newest(fingerprint_spec=2).build("x", Features(), 1000).plan.max_distance == 3
