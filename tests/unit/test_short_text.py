"""simdb.sketch.short_text (one short text in numpy, for a query's start-up) against the compiled kernels:
the same counters, so the same fingerprints, for every feature kind, spec and width; and the same
shingles, so the same one-bit MinHash (fingerprint spec v3)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simdb.kernels import compiled as kernels
from simdb.sketch import onebit, short_text
from simdb.sketch.features import WIDE_KEY, Features, unit_text
from simdb.sketch.simhash import fingerprint, fingerprints

_TEXT = st.text(alphabet=st.sampled_from("ab cd\tÉé ß ﬁ\u0301 x_1,.\n漢字🙂"), max_size=200)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_TEXT, max_size=3),
    st.sampled_from(["word", "char"]),
    st.integers(1, 6),
    st.booleans(),
    st.sampled_from([1, 2]),
)
def test_onetext_counts_as_the_kernels_do(
    texts: list[str], kind: str, n: int, distinct: bool, words: int
) -> None:
    features = Features(kind, n)
    units = [unit_text(text, features) for text in texts]
    arguments = (features.shingling, distinct, words, WIDE_KEY)
    ones, totals = short_text.bit_counts(units, *arguments)
    expected_ones, expected_totals = kernels.bit_counts(units, *arguments)
    assert np.array_equal(totals, expected_totals)
    assert np.array_equal(ones, expected_ones)


@settings(max_examples=200, deadline=None)
@given(_TEXT, st.sampled_from(["word", "char"]), st.integers(1, 6), st.sampled_from([64, 128]))
def test_spec3_of_one_short_text_in_numpy_equals_the_kernels(text: str, kind: str, n: int, bits: int) -> None:
    features = Features(kind, n)
    assert (
        onebit.in_numpy(unit_text(text, features), features, bits)
        == fingerprints([text], features, 3, bits)[0]
    )


def test_a_short_text_is_fingerprinted_without_loading_numba() -> None:
    """`simdb fingerprint --text` (and a query by text, which fingerprints the same way) reads
    numba and the kernels' machine code only for longer texts."""
    probe = (
        "import sys\nfrom simdb.cli import run\ntry:\n    run()\nfinally:\n"
        "    print(sorted(m for m in ('numba', 'simdb.kernels.compiled') if m in sys.modules))"
    )
    short = subprocess.run(
        [sys.executable, "-c", probe, "fingerprint", "--text", "hello world"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert short.stdout.splitlines()[-1] == "[]", short.stdout
    long = "hello world " * (short_text.LIMIT // 10)
    loaded = subprocess.run(
        [sys.executable, "-c", probe, "fingerprint", "--text", long],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.splitlines()[-1] == "['numba', 'simdb.kernels.compiled']", loaded.stdout
    spec3 = subprocess.run(
        [sys.executable, "-c", probe, "fingerprint", "--text", "hello world", "--fingerprint-spec", "3"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert spec3.stdout.splitlines() == [f"{fingerprint('hello world', spec=3):016x}", "[]"], spec3.stdout
