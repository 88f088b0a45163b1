"""simdb.plan.pairing: all pairs within k bits by sorting equal brute force, whatever the collisions."""

from __future__ import annotations

import numpy as np
import pytest
from support.oracles import hamming_pairs

from simdb.errors import InvalidParameter
from simdb.plan import pairing
from simdb.plan.blocks import BlockPlan


def _collisions(k: int, seed: int) -> np.ndarray:
    """Rows at every distance up to k + 2 from others, exact repeats, a long run of one value."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    values = [base]
    for flips in range(k + 3):
        copies = base.copy()
        for row in range(len(copies)):
            for bit in rng.choice(64, size=flips, replace=False):
                copies[row] ^= np.uint64(1) << np.uint64(bit)
        values.append(copies)
    values.append(np.full(30, base[0]))
    values.append(rng.integers(0, 2**64, size=200, dtype=np.uint64))
    return np.concatenate(values)


@pytest.mark.parametrize("range_rows", [pairing.RANGE_ROWS, 7])  # a table at once; up to 256 ranges of it
@pytest.mark.parametrize("jobs", [1, 3])
@pytest.mark.parametrize(("k", "blocks"), [(0, 1), (1, 2), (3, 4), (3, 5), (4, 6), (6, 8)])
def test_within_equals_brute_force(
    k: int, blocks: int, jobs: int, range_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pairing, "RANGE_ROWS", range_rows)
    fingerprints = _collisions(k, blocks)
    plan = BlockPlan(k, blocks)
    for distance in sorted({0, k // 2, k}):
        i, j, d = pairing.within(fingerprints, plan, distance, jobs)
        found = list(zip(i.tolist(), j.tolist(), d.tolist(), strict=True))
        assert len(found) == len(set(found)) and set(found) == hamming_pairs(
            dict(enumerate(fingerprints.tolist())), distance
        )


@pytest.mark.parametrize("lookup_bits", [pairing.LOOKUP_BITS, 3])  # top bits shared by many prefixes
@pytest.mark.parametrize(("k", "blocks"), [(0, 1), (1, 2), (3, 4), (3, 5), (4, 6)])
def test_pairs_of_fresh_rows_equal_brute_force(
    k: int, blocks: int, lookup_bits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looked up table by table (within_touching) or sorted and kept (within_fresh, whichever it
    takes): the brute-force pairs with a fresh row in them, each once, for fresh rows that pair
    with old rows, with each other and with nothing."""
    monkeypatch.setattr(pairing, "LOOKUP_BITS", lookup_bits)
    fingerprints = _collisions(k, blocks)
    every = hamming_pairs(dict(enumerate(fingerprints.tolist())), k)
    rng = np.random.default_rng(k)
    for fresh in (
        np.sort(rng.choice(len(fingerprints), size=25, replace=False)),
        np.arange(len(fingerprints) - 240, len(fingerprints) - 200),  # the long run and copies
        np.arange(len(fingerprints)),
        np.arange(0),
    ):
        wanted = {(i, j) for i, j, _ in every if i in set(fresh.tolist()) or j in set(fresh.tolist())}
        touched = [
            pair
            for first, second in pairing.within_touching(fingerprints, fresh, BlockPlan(k, blocks), k, jobs=2)
            for pair in zip(first.tolist(), second.tolist(), strict=True)
        ]
        assert len(touched) == len(set(touched)) and set(touched) == wanted
        kept = [
            pair
            for first, second in pairing.within_fresh(fingerprints, fresh, k)
            for pair in zip(first.tolist(), second.tolist(), strict=True)
        ]
        assert len(kept) == len(set(kept)) and set(kept) == wanted


def test_pairs_of_fresh_rows_look_them_up_while_few() -> None:
    """within_fresh looks a few fresh rows up, and sorts every row once most are fresh."""
    rows = 10**7
    for k in (3, 5):
        sorting = pairing._sorting_cost(pairing.pairing_plan(rows, k), rows)
        touching = [
            min(pairing._touching_cost(plan, rows, fresh) for plan in pairing._plans(k))
            for fresh in (10**4, 10**5, rows)
        ]
        assert touching[0] < touching[1] < sorting < touching[2]


def test_within_refuses_what_it_cannot_pair_exactly() -> None:
    with pytest.raises(InvalidParameter, match="within 4 bits"):
        pairing.within(np.zeros(3, dtype=np.uint64), BlockPlan(3, 4), 4)
    with pytest.raises(InvalidParameter, match="128-bit"):
        pairing.within(np.zeros(3, dtype=np.uint64), BlockPlan(3, 4, 128), 3)
    empty = pairing.within(np.zeros(0, dtype=np.uint64), BlockPlan(3, 4), 3)
    assert [len(part) for part in empty] == [0, 0, 0]


@pytest.mark.parametrize("jobs", [1, 3])
def test_sharing_equals_brute_force(jobs: int) -> None:
    rng = np.random.default_rng(3)
    keys = [rng.integers(0, 40, size=300) for _ in range(5)]  # small ranges: many shared keys
    keys.append(np.full(300, 7))  # one band where every row shares its key
    for columns in (keys[:5], keys):
        i, j = pairing.sharing(columns, jobs)
        found = list(zip(i.tolist(), j.tolist(), strict=True))
        expected = {
            (a, b) for a in range(300) for b in range(a + 1, 300) if any(c[a] == c[b] for c in columns)
        }
        assert len(found) == len(set(found)) and set(found) == expected
    assert [len(part) for part in pairing.sharing([])] == [0, 0]


def test_pairing_plan_takes_longer_prefixes_as_the_rows_grow() -> None:
    """Any plan with more blocks than the distance is exact (the brute-force test above pairs with
    several); the cheapest one for many rows has more tables than the fewest, never fewer."""
    for k in (1, 3, 5):
        plans = [pairing.pairing_plan(rows, k) for rows in (10**3, 10**6, 10**8)]
        assert plans[0].blocks == k + 1 and all(p.max_distance == k for p in plans)
        assert [p.blocks for p in plans] == sorted(p.blocks for p in plans)
    assert pairing.pairing_plan(10**8, 3).blocks == 5  # 10 tables of 25-26 bits, not the index's 4 of 16
