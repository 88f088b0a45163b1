"""Permuted block tables: the pigeonhole guarantee, permutations, probe ranges and the b rule."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdb.errors import InvalidParameter
from simdb.plan.blocks import MAX_TABLES, BlockPlan, block_widths
from simdb.sketch.bits import MASK64, hamming, to_signed

U64 = st.integers(min_value=0, max_value=MASK64)

PLANS = [(k, b) for k in range(0, 9) for b in range(k + 1, 17) if math.comb(b, k) <= MAX_TABLES]


@st.composite
def pair_within(draw: st.DrawFn) -> tuple[BlockPlan, int, int]:
    """A plan, a value, and a second value at most k bits away from it."""
    k, b = draw(st.sampled_from(PLANS))
    value = draw(U64)
    flips = draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
    other = value
    for bit in flips:
        other ^= 1 << bit
    return BlockPlan(k, b), value, other


def test_widths_cover_64_bits() -> None:
    for blocks in range(1, 65):
        widths = block_widths(blocks)
        assert sum(widths) == 64 and max(widths) - min(widths) <= 1 and len(widths) == blocks


def test_table_count_and_prefixes() -> None:
    plan = BlockPlan(3, 5)
    assert len(plan.tables) == math.comb(5, 3) == 10
    assert {t.prefix_bits for t in plan.tables} == {25, 26}  # widths 13,13,13,13,12
    assert plan.tables[0].order == (0, 1, 2, 3, 4)


@settings(max_examples=500)
@given(pair_within())
def test_some_table_has_equal_prefixes_within_k(case: tuple[BlockPlan, int, int]) -> None:
    plan, a, b = case
    assert any(t.prefix(a) == t.prefix(b) for t in plan.tables)


@settings(max_examples=500)
@given(pair_within())
def test_prefix_mask_holds_the_bits_of_the_prefix(case: tuple[BlockPlan, int, int]) -> None:
    # two fingerprints share a table's prefix exactly when they agree under its mask (pairing's test)
    plan, a, b = case
    for table in plan.tables:
        assert (table.prefix(a) == table.prefix(b)) == ((a ^ b) & table.prefix_mask == 0)
        assert table.prefix_mask.bit_count() == table.prefix_bits


@settings(max_examples=500)
@given(pair_within())
def test_signed_prefixes_agree_with_unsigned_ones(case: tuple[BlockPlan, int, int]) -> None:
    # SQL compares bigint >> shift (an arithmetic shift of the signed value): the same test
    plan, stored, query = case
    for table in plan.tables:
        signed_equal = (
            to_signed(table.permute(stored)) >> table.shift == to_signed(table.permute(query)) >> table.shift
        )
        assert signed_equal == (table.prefix(stored) == table.prefix(query))


@settings(max_examples=300)
@given(st.sampled_from(PLANS), U64, U64)
def test_permutation_preserves_distance(plan_args: tuple[int, int], a: int, b: int) -> None:
    plan = BlockPlan(*plan_args)
    for table in plan.tables:
        assert hamming(table.permute(a), table.permute(b)) == hamming(a, b)


def test_prefix_is_the_leading_blocks() -> None:
    plan = BlockPlan(3, 5)  # blocks A..E of 13, 13, 13, 13, 12 bits
    value = 0x0123456789ABCDEF
    blocks = [
        (value >> 51) & 0x1FFF,
        (value >> 38) & 0x1FFF,
        (value >> 25) & 0x1FFF,
        (value >> 12) & 0x1FFF,
        value & 0xFFF,
    ]
    assert plan.tables[0].prefix(value) == blocks[0] << 13 | blocks[1]  # A B
    assert plan.tables[9].prefix(value) == blocks[3] << 12 | blocks[4]  # D E


@pytest.mark.parametrize(("k", "b"), [(3, 3), (3, 2), (-1, 4), (9, 10), (6, 12)])
def test_bad_plans_are_refused(k: int, b: int) -> None:
    with pytest.raises(InvalidParameter):
        BlockPlan(k, b)
