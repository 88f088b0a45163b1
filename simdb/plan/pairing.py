"""All pairs among rows held in memory, by sorting: within k bits of 64-bit fingerprints, or
sharing a band key (MinHash LSH).

The same permuted tables as the index (Manku et al.'s batch mode): two fingerprints within k
bits share some table's prefix, so sorting the rows by each table's prefix puts every candidate
pair in one run of equal prefixes. For fingerprints a compiled kernel radix-sorts the prefixes
and compares each run pair by pair (simdb.kernels.compiled.close_pairs), keeping a pair only in the first
table whose prefix it shares; band keys are sorted and compared in numpy. In PostgreSQL the same
work is a hash self-join per table, which costs several times more per candidate pair. The pairs
of a few fresh rows (pairs --new) need no sort: each row's prefix is looked up among theirs.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

from simdb.errors import InvalidParameter
from simdb.plan.blocks import MAX_TABLES, BlockPlan, Table

Positions = np.ndarray  # int64 row positions
# Measured on the 2-core development machine, one thread, 4M random rows (k=3 with 4, 5 and 6
# blocks, k=5 with 7 and 8): 31.5 to 45.7 ns a row and table, 1.2 to 2.1 ns a candidate pair.
SORT_S_PER_ROW = 32e-9  # per row and table: its prefix computed, sorted and its run scanned (close_pairs)
COMPARE_S_PER_PAIR = 1.6e-9  # per candidate pair compared in a run of equal prefixes
# touching_pairs, 10M rows and 100,000 fresh (k=3 with 5 and 6 blocks, k=5 with 7 and 8), one
# thread, on a noisier machine where sorting measured 2 to 3 times the figures above, scaled by
# that: a row 12 ns a table, 35 ns more where a fresh row has its top prefix bits.
LOOKUP_S_PER_ROW = 12e-9
LOOKUP_S_PER_HIT = 35e-9
LOOKUP_BITS = 20  # the top prefix bits touching_pairs looks fresh rows up by: 128 KB of bits, 4 MB of starts
RANGE_ROWS = 8_000_000  # about as many rows of a table paired at once (within_by_ranges): ~250 MB a thread


def prefix_blocks(table: Table) -> np.ndarray:
    """The blocks of a table's prefix as (source, width, target) rows, the target counted from
    the prefix's lowest bit (as Table.prefix computes one value)."""
    blocks = [(move.source, move.width, move.target - table.shift) for move in table.prefix_moves]
    return np.array(blocks, dtype=np.int64).reshape(-1, 3)


def within(
    fingerprints: np.ndarray, plan: BlockPlan, max_distance: int, jobs: int = 1
) -> tuple[Positions, Positions, np.ndarray]:
    """(i, j, distance) of every pair of positions i < j whose fingerprints differ in at most
    `max_distance` bits (at most the plan's k), each pair once, in order; `jobs` threads pair
    the tables' prefix ranges (the kernel runs outside the GIL)."""
    found = list(within_by_ranges(fingerprints, plan, max_distance, jobs))
    i, j = _ordered(found, len(fingerprints))
    return i, j, np.bitwise_count(fingerprints[i] ^ fingerprints[j]).astype(np.int64)


def within_by_ranges(
    fingerprints: np.ndarray, plan: BlockPlan, max_distance: int, jobs: int = 1
) -> Iterator[tuple[Positions, Positions]]:
    """The pairs of `within` (i < j, each once), a batch per table and range of its prefixes:
    a table's rows are paired RANGE_ROWS or so at a time (those whose prefix starts with the
    same bits: every pair that shares the prefix is in one range), so that memory beyond the
    fingerprints holds one range per thread, not every row's sort keys."""
    if plan.bits != 64 or not 0 <= max_distance <= plan.max_distance:
        raise InvalidParameter(
            f"cannot pair {plan.bits}-bit fingerprints within {max_distance} bits by sorting",
            f"give 64-bit fingerprints and a distance of 0..{plan.max_distance}",
        )

    from simdb.kernels import compiled as kernels  # (numba loads with the first pairs, not with the CLI)

    masks = np.array([table.prefix_mask for table in plan.tables], dtype=np.uint64)
    blocks = [prefix_blocks(table) for table in plan.tables]
    wanted = max(0, int(np.ceil(np.log2(max(1, len(fingerprints) / RANGE_ROWS)))))

    def ranges() -> Iterator[tuple[int, Positions | None]]:
        """(table, the positions of one range of its prefixes, or None: all rows), in order."""
        for number, table in enumerate(plan.tables):
            bits = min(8, table.prefix_bits, wanted)
            if bits == 0:
                yield number, None
                continue
            tops = kernels.prefix_tops(fingerprints, blocks[number], table.prefix_bits - bits)
            for top in range(1 << bits):
                yield number, np.flatnonzero(tops == top)

    def range_pairs(item: tuple[int, Positions | None]) -> tuple[Positions, Positions]:
        number, chosen = item
        rows = fingerprints if chosen is None else fingerprints[chosen]
        i, j = kernels.close_pairs(rows, blocks[number], masks[number], masks[:number], max_distance)
        return (i, j) if chosen is None else (chosen[i], chosen[j])

    yield from each(range_pairs, ranges(), jobs)


def within_fresh(
    fingerprints: np.ndarray, fresh: Positions, max_distance: int, jobs: int = 1
) -> Iterator[tuple[Positions, Positions]]:
    """The pairs of `within_by_ranges` that involve a row at one of the `fresh` positions, each
    once, a batch at a time, the cheaper way: each table's prefix of every row looked up among
    the fresh rows' (within_touching: a pass over the rows a table), or, where many rows are
    fresh, every pair found by sorting and those of a fresh row kept."""
    rows = len(fingerprints)
    touching = min(_plans(max_distance), key=lambda plan: _touching_cost(plan, rows, len(fresh)))
    sorting = pairing_plan(rows, max_distance)
    if _touching_cost(touching, rows, len(fresh)) <= _sorting_cost(sorting, rows):
        yield from within_touching(fingerprints, fresh, touching, max_distance, jobs)
        return
    is_fresh = np.zeros(rows, dtype=np.bool_)
    is_fresh[fresh] = True
    for first, second in within_by_ranges(fingerprints, sorting, max_distance, jobs):
        kept = is_fresh[first] | is_fresh[second]
        yield first[kept], second[kept]


def within_touching(
    fingerprints: np.ndarray, fresh: Positions, plan: BlockPlan, max_distance: int, jobs: int = 1
) -> Iterator[tuple[Positions, Positions]]:
    """The pairs of `within_by_ranges` that involve a row at one of the `fresh` positions, a
    batch per table: each row's prefix looked up among the fresh rows' instead of every row
    sorted (simdb.kernels.compiled.touching_pairs)."""
    from simdb.kernels import compiled as kernels

    masks = np.array([table.prefix_mask for table in plan.tables], dtype=np.uint64)
    is_fresh = np.zeros(len(fingerprints), dtype=np.bool_)
    is_fresh[fresh] = True

    def table_pairs(number: int) -> tuple[Positions, Positions]:
        blocks = prefix_blocks(plan.tables[number])
        return kernels.touching_pairs(
            fingerprints, fresh, is_fresh, blocks, masks[number], masks[:number], max_distance, LOOKUP_BITS
        )

    yield from each(table_pairs, range(len(plan.tables)), jobs)


def pairing_plan(rows: int, max_distance: int) -> BlockPlan:
    """The block plan that pairs `rows` 64-bit fingerprints within `max_distance` bits fastest in
    memory. Any number of blocks above the distance finds every pair (the pigeonhole), whatever
    the index stores: more blocks give more tables, each a sort of every row, and longer prefixes,
    so fewer candidate pairs to compare in each run (at 100M rows within 3 bits, the index's 4
    tables of 16-bit prefixes compare 3e11 candidates; 10 tables of 25 to 26 bits, 1e9)."""
    return min(_plans(max_distance), key=lambda plan: _sorting_cost(plan, rows))


def _plans(max_distance: int) -> list[BlockPlan]:
    """The block plans pairing may use: a few more blocks than the distance."""
    return [
        BlockPlan(max_distance, blocks)
        for blocks in range(max_distance + 1, min(64, max_distance + 6) + 1)
        if math.comb(blocks, max_distance) <= MAX_TABLES
    ]


def _sorting_cost(plan: BlockPlan, rows: int) -> float:
    """Seconds to pair `rows` rows by sorting each table's prefixes (within_by_ranges)."""
    candidates = sum(rows * rows / 2 / 2.0**table.prefix_bits for table in plan.tables)
    return len(plan.tables) * rows * SORT_S_PER_ROW + candidates * COMPARE_S_PER_PAIR


def _touching_cost(plan: BlockPlan, rows: int, fresh: int) -> float:
    """Seconds to find the pairs of `fresh` rows among `rows` (within_touching): a pass over the
    rows a table, a lookup for a row whose top prefix bits some fresh row has, and the candidates."""
    hits = sum(-math.expm1(-fresh / 2.0 ** min(table.prefix_bits, LOOKUP_BITS)) for table in plan.tables)
    candidates = sum(fresh * rows / 2.0**table.prefix_bits for table in plan.tables)
    passes = rows * (len(plan.tables) * LOOKUP_S_PER_ROW + hits * LOOKUP_S_PER_HIT)
    return passes + candidates * COMPARE_S_PER_PAIR


@contextmanager
def loading_kernels() -> Iterator[None]:
    """Load the pairing kernel (numba's import and its machine code, about 0.35 s; a compile the
    first time) in a thread while the caller waits on the database for the rows to pair. An
    error or Ctrl-C in the caller does not wait for it (a daemon thread)."""
    thread = threading.Thread(target=load_kernels, name="simdb-load-kernels", daemon=True)
    thread.start()
    yield
    thread.join()


def load_kernels() -> None:
    """Load (or compile) the pairing kernels: pair two fingerprints, all pairs and a fresh one's."""
    two, plan = np.arange(2, dtype=np.uint64), BlockPlan(1, 2)
    within(two, plan, 1)
    list(within_touching(two, np.array([1]), plan, 1))


def sharing(keys: list[np.ndarray], jobs: int = 1) -> tuple[Positions, Positions]:
    """(i, j) of every pair of positions i < j equal in at least one of the key arrays (the bands
    of MinHash LSH), each pair once; `jobs` threads take the bands (numpy sorts outside the GIL)."""
    return _once(list(each(_in_runs, keys, jobs)), len(keys[0]) if keys else 0)


T = TypeVar("T")


def each(
    work: Callable[[T], tuple[Positions, Positions]], items: Iterable[T], jobs: int
) -> Iterator[tuple[Positions, Positions]]:
    """work(item) for each item, in order, on `jobs` threads (this one alone for 1); at most
    `jobs` items are worked on or waiting at a time, so memory holds that many."""
    if jobs <= 1:
        yield from map(work, items)
        return
    with ThreadPoolExecutor(jobs, thread_name_prefix="simdb-pairs") as pool:
        pending: deque[Future[tuple[Positions, Positions]]] = deque()
        for item in items:
            pending.append(pool.submit(work, item))
            if len(pending) >= jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _once(found: list[tuple[Positions, Positions]], rows: int) -> tuple[Positions, Positions]:
    """The pairs found by several tables or bands, once, ordered."""
    return _ordered(found, rows, np.unique)


def _ordered(
    found: list[tuple[Positions, Positions]], rows: int, order: Callable[[np.ndarray], np.ndarray] = np.sort
) -> tuple[Positions, Positions]:
    """The pairs found by several tables or bands, in order of (i, j)."""
    first = np.concatenate([np.empty(0, dtype=np.int64), *(f[0] for f in found)])
    second = np.concatenate([np.empty(0, dtype=np.int64), *(f[1] for f in found)])
    i, j = np.divmod(order(first * rows + second), max(rows, 1))
    return i, j


Check = tuple[np.ndarray, Callable[[np.ndarray, np.ndarray], np.ndarray]]  # values, pairs to keep


def _in_runs(keys: np.ndarray, check: Check | None = None) -> tuple[Positions, Positions]:
    """The pairs (i < j) of rows with equal keys, and with `check` = (values, keep) only those
    for which keep(values[i], values[j]) holds. Sorted by key, row p is compared with rows p + 1,
    p + 2, ... while they are in its run (the positions still in a run shrink with each step, so
    the work is the number of candidate pairs); the values are sorted along, and read in order."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    values = None if check is None else check[0][order]
    firsts, seconds = [], []
    step = 1
    live = np.flatnonzero(ordered[1:] == ordered[:-1])  # positions whose next row shares the key
    while live.size:
        kept = live if check is None or values is None else live[check[1](values[live], values[live + step])]
        a, b = order[kept], order[kept + step]
        firsts.append(np.minimum(a, b))
        seconds.append(np.maximum(a, b))
        step += 1
        live = live[live + step < len(ordered)]
        live = live[ordered[live + step] == ordered[live]]
    empty = np.empty(0, dtype=np.int64)
    return np.concatenate([empty, *firsts]), np.concatenate([empty, *seconds])
