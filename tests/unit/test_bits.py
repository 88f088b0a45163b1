"""The unsigned/signed rule and hex input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simdb.errors import InvalidParameter
from simdb.sketch.bits import MASK64, parse_hex, to_hex, to_signed, to_unsigned


@given(st.integers(min_value=0, max_value=MASK64))
def test_signed_round_trip(value: int) -> None:
    signed = to_signed(value)
    assert -(2**63) <= signed < 2**63
    assert to_unsigned(signed) == value
    assert parse_hex(to_hex(value)) == value


def test_sign_rule_examples() -> None:
    assert to_signed(0xFFFFFFFFFFFFFFFF) == -1
    assert to_signed(0x8000000000000000) == -(2**63)
    assert to_signed(0x7FFFFFFFFFFFFFFF) == 2**63 - 1
    assert to_hex(-1) == "ffffffffffffffff"
    assert parse_hex("0xFF") == 255


@pytest.mark.parametrize("bad", ["", "xyz", "12345678901234567", "0x", "-1", "12 34"])
def test_bad_hex(bad: str) -> None:
    with pytest.raises(InvalidParameter, match="bad fingerprint"):
        parse_hex(bad)
