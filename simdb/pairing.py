"""All pairs within k bits among 64-bit fingerprints held in memory, by sorting (pure numpy).

The same permuted tables as the index (Manku et al.'s batch mode): two fingerprints within k
bits share some table's prefix, so sorting the rows by each table's prefix puts every candidate
pair in one run of equal prefixes, where numpy compares them all at once. In PostgreSQL the
same work is a hash self-join per table, which costs several times more per candidate pair.
"""

from __future__ import annotations

import numpy as np

from simdb.blocks import BlockPlan, Table
from simdb.errors import InvalidParameter

Positions = np.ndarray  # int64 row positions


def prefixes(fingerprints: np.ndarray, table: Table) -> np.ndarray:
    """Each unsigned 64-bit fingerprint's prefix in `table` (as Table.prefix computes one value)."""
    result = np.zeros(len(fingerprints), dtype=np.uint64)
    for move in table.moves:
        if move.target >= table.shift:  # the blocks of the prefix
            block = (fingerprints >> np.uint64(move.source)) & np.uint64((1 << move.width) - 1)
            result |= block << np.uint64(move.target - table.shift)
    return result


def within(
    fingerprints: np.ndarray, plan: BlockPlan, max_distance: int
) -> tuple[Positions, Positions, np.ndarray]:
    """(i, j, distance) of every pair of positions i < j whose fingerprints differ in at most
    `max_distance` bits (at most the plan's k), each pair once."""
    if plan.bits != 64 or not 0 <= max_distance <= plan.max_distance:
        raise InvalidParameter(
            f"cannot pair {plan.bits}-bit fingerprints within {max_distance} bits by sorting",
            f"give 64-bit fingerprints and a distance of 0..{plan.max_distance}",
        )
    found = [_in_runs(fingerprints, prefixes(fingerprints, table), max_distance) for table in plan.tables]
    first = np.concatenate([f[0] for f in found])
    second = np.concatenate([f[1] for f in found])
    unique = np.unique(first * len(fingerprints) + second)  # a pair found by several tables, once
    i, j = np.divmod(unique, len(fingerprints))
    return i, j, np.bitwise_count(fingerprints[i] ^ fingerprints[j]).astype(np.int64)


def _in_runs(fingerprints: np.ndarray, keys: np.ndarray, max_distance: int) -> tuple[Positions, Positions]:
    """The pairs within max_distance among rows with equal keys: sorted by key, row p is compared
    with rows p + 1, p + 2, ... while they are in its run (the positions still in a run shrink
    with each step, so the work is the number of candidate pairs)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    values = fingerprints[order]
    firsts, seconds = [], []
    step = 1
    live = np.flatnonzero(ordered[1:] == ordered[:-1])  # positions whose next row shares the key
    while live.size:
        close = np.bitwise_count(values[live] ^ values[live + step]) <= max_distance
        a, b = order[live[close]], order[live[close] + step]
        firsts.append(np.minimum(a, b))
        seconds.append(np.maximum(a, b))
        step += 1
        live = live[live + step < len(ordered)]
        live = live[ordered[live + step] == ordered[live]]
    empty = np.empty(0, dtype=np.int64)
    return np.concatenate([empty, *firsts]), np.concatenate([empty, *seconds])
