"""The planner: every design is priced from its prefixes, and the choice is the cheapest for the workload."""

from __future__ import annotations

import json
import math

import pytest
from support import simdb

from simdb.blocks import MAX_TABLES
from simdb.errors import InvalidParameter
from simdb.planner import WORKLOADS, choose, designs, plan_for


def test_designs_span_every_sane_b() -> None:
    options = designs(1_000_000, 3)
    assert [d.plan.blocks for d in options] == [4, 5, 6, 7, 8]  # C(9, 3) = 84 > MAX_TABLES
    assert all(d.tables == math.comb(d.plan.blocks, 3) <= MAX_TABLES for d in options)
    five = options[1]
    assert five.prefix_bits == (25, 26)
    expected = sum(1_000_000 / 2**t.prefix_bits for t in five.plan.tables)
    assert five.candidates_per_query == pytest.approx(expected)
    assert five.candidates_per_batch == pytest.approx(
        sum(1_000_000 * 999_999 / 2 ** (t.prefix_bits + 1) for t in five.plan.tables)
    )


@pytest.mark.parametrize("rows", [1_000, 100_000, 1_000_000, 10_000_000])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 6, 8])
def test_choice_is_the_cheapest_for_its_workload(rows: int, k: int) -> None:
    options = designs(rows, k)
    assert choose(options, "online").online_ms == min(d.online_ms for d in options)
    assert choose(options, "batch").batch_s == min(d.batch_s for d in options)
    best_online = min(d.online_ms for d in options)
    best_batch = min(d.batch_s for d in options)
    both = choose(options, "both")
    assert both.online_ms / best_online + both.batch_s / best_batch == pytest.approx(
        min(d.online_ms / best_online + d.batch_s / best_batch for d in options)
    )
    assert plan_for(rows, k) == both.plan


def test_more_rows_never_get_shorter_prefixes() -> None:
    for k in range(1, 7):
        chosen = [
            min(plan_for(rows, k, "online").tables[0].prefix_bits, 64) for rows in (10**3, 10**5, 10**7)
        ]
        assert chosen == sorted(chosen)


def test_planner_refusals() -> None:
    with pytest.raises(InvalidParameter, match="out of range"):
        designs(1000, 9)
    with pytest.raises(InvalidParameter, match="not positive"):
        designs(0, 3)
    with pytest.raises(InvalidParameter, match="unknown workload"):
        choose(designs(1000, 3), "sometimes")


def test_plan_command(capsys: pytest.CaptureFixture[str]) -> None:
    for workload in WORKLOADS:
        code, out, _ = simdb(capsys, "plan", "--rows", "1000000", "-k", "3", "--workload", workload, "--json")
        rows = json.loads(out)
        assert code == 0 and [r["blocks"] for r in rows] == [4, 5, 6, 7, 8]
        assert sum(r["chosen"] for r in rows) == 1
    code, out, _ = simdb(capsys, "plan", "--rows", "1000000", "-k", "3")
    assert code == 0 and "* chosen: 5 blocks (10 tables)" in out
    assert simdb(capsys, "plan", "-k", "9")[0] == 1
