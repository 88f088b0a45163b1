"""Choose the number of blocks b for an index from its expected rows, k and workload (pure code).

For each b > k the design has C(b, k) tables whose prefixes are the first b - k blocks. A cost
model prices each design's query time, all-pairs time, bytes per row and load time. Its
constants were measured on this project's development machine (2-core VM, PostgreSQL 15) with
index layout v2: 1,000,000 random fingerprints at k = 3 with b = 4, 5 and 6 (4, 10 and 20
tables), 1,000 near queries each against a bare round trip, the all-pairs statement, the bytes
of the table and its B-trees, and the bulk load. `simdb plan` prints the figures behind every
choice.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from simdb.errors import InvalidParameter
from simdb.plan.blocks import MAX_DISTANCES, MAX_TABLES, BlockPlan, check_distance

WORKLOADS = ("online", "batch", "both")
DEFAULT_EXPECTED_ROWS = 1_000_000


@dataclass(frozen=True)
class Costs:
    """Unit costs of the operations a design performs."""

    query_ms: float = 0.17  # fixed per query: round trip, function calls, final sort
    probe_ms: float = 0.012  # one bitmap scan of a table's B-tree
    candidate_ms: float = 0.002  # one random candidate: its row read and checked with bit_count
    # one candidate checked in a B-tree that carries the sketch: fit to simdb.near at 100M rows,
    # k=3, 4 tables (6,104 candidates) on three machines of this kind, p50 0.883 ms (embedded
    # PostgreSQL 18), 1.308 ms (PostgreSQL 15) and 1.864 ms (a slower machine, tuned 15): the
    # prediction, 1.29 ms, is within x1.46 of each (0.0002 predicted 1.44 ms, x1.63 the first)
    covered_candidate_ms: float = 0.000175
    join_row_s: float = 1.0e-6  # per row and table: simdb.pairs' hash self-join of a table's prefix
    pair_s: float = 0.2e-6  # per candidate pair compared in that self-join
    load_row_s: float = 7.5e-6  # per row and table: COPY and upsert with the B-trees in place
    row_bytes: float = 74.0  # the row (short key, 64-bit fingerprint) and its primary key
    entry_bytes: float = 6.0  # per row and table: a row's place in a B-tree's posting list
    key_bytes: float = 14.0  # per distinct prefix and table: a B-tree tuple (header, key, slot)
    covered_entry_bytes: float = 28.0  # per row and table where a B-tree carries the sketch: a tuple
    fill: float = 0.9  # B-tree leaf fill factor


DEFAULT_COSTS = Costs()


@dataclass(frozen=True)
class Design:
    """One candidate block plan priced for a row count."""

    plan: BlockPlan
    rows: int
    online_ms: float
    batch_s: float
    load_s: float
    candidates_per_query: float
    candidates_per_batch: float
    bytes_per_row: float
    covering: bool = False  # B-trees on (prefix, sketch), a query's candidates checked in them
    btree_bytes_per_row: float = 0.0

    @property
    def tables(self) -> int:
        return len(self.plan.tables)

    @property
    def total_bytes(self) -> float:
        """The index's bytes: its rows and their B-trees."""
        return self.bytes_per_row * self.rows

    @property
    def searched_bytes(self) -> float:
        """The bytes queries read, which the memory budget must hold: the B-trees alone where
        they carry the sketch (a row is read only when found), else the rows as well."""
        return (self.btree_bytes_per_row if self.covering else self.bytes_per_row) * self.rows

    @property
    def prefix_bits(self) -> tuple[int, int]:
        bits = [table.prefix_bits for table in self.plan.tables]
        return min(bits), max(bits)


def price(plan: BlockPlan, rows: int, costs: Costs = DEFAULT_COSTS, *, covering: bool = False) -> Design:
    """Expected work and size of a design: random candidates are N / 2^prefix per probe per table
    (the prefix as indexed: at most 64 bits). A table's B-tree stores each distinct prefix once
    with the rows that share it (PostgreSQL's deduplication), so short prefixes cost little;
    `covering` B-trees (on prefix and sketch: Index.covering) store a tuple a row, and check each
    candidate in the B-tree, ten times cheaper than on its row."""
    per_query = sum(rows / 2.0 ** min(t.prefix_bits, 64) for t in plan.tables)
    per_batch = sum(rows * (rows - 1) / 2.0 ** (min(t.prefix_bits, 64) + 1) for t in plan.tables)
    btree_bytes = sum(
        (
            costs.covered_entry_bytes
            if covering
            else costs.entry_bytes + costs.key_bytes / max(1.0, rows / 2.0 ** min(t.prefix_bits, 64))
        )
        / costs.fill
        for t in plan.tables
    )
    tables = len(plan.tables)
    candidate_ms = costs.covered_candidate_ms if covering else costs.candidate_ms
    return Design(
        plan=plan,
        rows=rows,
        online_ms=costs.query_ms + costs.probe_ms * tables + candidate_ms * per_query,
        batch_s=costs.join_row_s * rows * tables + costs.pair_s * per_batch,
        load_s=costs.load_row_s * rows * tables,
        candidates_per_query=per_query,
        candidates_per_batch=per_batch,
        bytes_per_row=costs.row_bytes + (plan.bits - 64) / 8 + btree_bytes,
        covering=covering,
        btree_bytes_per_row=btree_bytes,
    )


def designs(
    rows: int,
    max_distance: int,
    costs: Costs = DEFAULT_COSTS,
    bits: int = 64,
    *,
    coverings: tuple[bool, ...] = (False,),
    blocks: int | None = None,
) -> list[Design]:
    """Every design with b > k blocks (or b = `blocks`) and at most MAX_TABLES tables, each shape
    once (at k = 0 every b gives the same single table keyed by the whole fingerprint: only b = 1
    is listed), with each of `coverings`: B-trees on the prefix alone (False) or on prefix and
    sketch (True, see price)."""
    if rows < 1:
        raise InvalidParameter(f"expected rows {rows} is not positive", "give a row count of 1 or more")
    check_distance(max_distance, bits)
    result: list[Design] = []
    for count in range(max_distance + 1, bits + 1) if blocks is None else (blocks,):
        if blocks is None and math.comb(count, max_distance) > MAX_TABLES:
            break
        for covering in coverings:
            design = price(BlockPlan(max_distance, count, bits), rows, costs, covering=covering)
            shape = (design.tables, design.prefix_bits, covering)
            if not any((d.tables, d.prefix_bits, d.covering) == shape for d in result):
                result.append(design)
    return result


def choose(options: list[Design], workload: str = "both", memory: float | None = None) -> Design:
    """The cheapest design for the workload, its storage and its load, among those whose index
    searches fit in `memory` bytes (if none does, among all): an index whose searched bytes
    (Design.searched_bytes) exceed the memory the server may cache reads them from disk, where
    every cost below grows.

    Each cost counts relative to the best any design achieves, so that no unit dominates; the
    workload says which times count (online: query time; batch: all-pairs time; both: the two),
    and bytes per row and load time always count. Ties go to fewer tables.
    """
    if workload not in WORKLOADS:
        raise InvalidParameter(f"unknown workload {workload!r}", f"use one of {', '.join(WORKLOADS)}")
    within = [d for d in options if not memory or d.searched_bytes <= memory] or options
    return min(
        within, key=lambda design: (round(score(design, within, workload), 9), design.tables, design.covering)
    )


def score(design: Design, options: list[Design], workload: str) -> float:
    """The sum of the design's relative costs that `choose` minimises."""
    online = design.online_ms / min(d.online_ms for d in options)
    batch = design.batch_s / min(d.batch_s for d in options)
    size = design.bytes_per_row / min(d.bytes_per_row for d in options)
    load = design.load_s / min(d.load_s for d in options)
    times = {"online": online, "batch": batch, "both": online + batch}[workload]
    return times + size + load


def plan_for(
    rows: int, max_distance: int, workload: str = "both", bits: int = 64, memory: float | None = None
) -> BlockPlan:
    """The block plan of the cheapest design with B-trees on the prefix alone (within `memory`
    bytes: see choose); `simdb create` chooses between both kinds of B-tree (design_for)."""
    return design_for(rows, max_distance, workload, bits, memory, coverings=(False,)).plan


def design_for(
    rows: int,
    max_distance: int,
    workload: str = "both",
    bits: int = 64,
    memory: float | None = None,
    *,
    coverings: tuple[bool, ...] = (False, True),
    blocks: int | None = None,
) -> Design:
    """The design `simdb create` makes: its block plan (`blocks`, else the planner's) and whether
    its B-trees carry the sketch, the cheapest of `coverings` (see choose)."""
    options = designs(rows, max_distance, bits=bits, coverings=coverings, blocks=blocks)
    return choose(options, workload, memory)


@dataclass(frozen=True)
class Comparison:
    """What `simdb plan` shows: every design for a row count and k, and the one chosen (within
    `memory` bytes, where given)."""

    rows: int
    max_distance: int
    workload: str
    options: list[Design]
    chosen: Design
    bits: int = 64
    memory: float | None = None
    unbounded: Design | None = None  # the choice without the memory budget

    def as_dict(self) -> list[dict[str, object]]:
        return [
            {
                "bits": d.plan.bits,
                "blocks": d.plan.blocks,
                "tables": d.tables,
                "prefix_bits": list(d.prefix_bits),
                "btrees": "prefix, fingerprint" if d.covering else "prefix",
                "candidates_per_query": d.candidates_per_query,
                "candidates_per_batch": d.candidates_per_batch,
                "bytes_per_row": d.bytes_per_row,
                "query_ms": d.online_ms,
                "pairs_s": d.batch_s,
                "load_s": d.load_s,
                "gigabytes": d.total_bytes / 1e9,
                "searched_gigabytes": d.searched_bytes / 1e9,
                "fits": self.memory is None or d.searched_bytes <= self.memory,
                "chosen": d is self.chosen,
            }
            for d in self.options
        ]

    def lines(self) -> list[str]:
        lines = [
            f"designs for {self.rows} rows of {self.bits}-bit fingerprints, max distance "
            f"{self.max_distance}, workload {self.workload}:",
            f"  {'blocks':>6} {'tables':>6} {'prefix':>7} {'btrees':>8} {'cand/query':>11} "
            f"{'cand pairs':>11} {'bytes/row':>9} {'GB':>7} {'query ms':>9} {'pairs s':>9} {'load s':>8}",
        ]
        for d in self.options:
            low, high = d.prefix_bits
            bits = f"{low}" if low == high else f"{low}-{high}"
            lines.append(
                f"{'*' if d is self.chosen else ' '} {d.plan.blocks:>6} {d.tables:>6} {bits:>7} "
                f"{'+fp' if d.covering else 'prefix':>8} "
                f"{d.candidates_per_query:>11.3g} {d.candidates_per_batch:>11.3g} {d.bytes_per_row:>9.0f} "
                f"{d.total_bytes / 1e9:>7.3g} {d.online_ms:>9.3f} {d.batch_s:>9.3g} {d.load_s:>8.3g}"
            )
        carried = ", B-trees on prefix and fingerprint" if self.chosen.covering else ""
        lines.append(
            f"* chosen: {self.chosen.plan.blocks} blocks ({self.chosen.tables} tables{carried}); costs "
            "measured on simdb's development machine, see simdb/plan/planner.py"
        )
        if any(d.covering for d in self.options):
            lines.append(
                "btrees +fp: each B-tree carries the fingerprint, so a query checks its candidates there"
                " and reads only the rows it finds (more bytes, fewer page reads)"
            )
        if self.memory is not None:
            lines.append(self._memory_line())
        candidates = self.chosen.candidates_per_query
        share = candidates / self.rows
        lines.append(
            f"exact up to k={MAX_DISTANCES[self.bits]} on {self.bits} bits; at k={self.max_distance} a query "
            f"checks about {candidates:.3g} random candidates ({share:.2g} of the rows: "
            f"{'an indexed search' if share < 0.01 else 'close to a scan'})"
        )
        return lines

    def _memory_line(self) -> str:
        """Why the memory budget chose, or that it did not matter."""
        budget = f"memory budget {(self.memory or 0) / 1e9:.3g} GB"
        unbounded = self.unbounded
        if unbounded is None or unbounded is self.chosen:
            fits = unbounded is None or unbounded.searched_bytes <= (self.memory or 0)
            chosen = "the cheapest design fits it" if fits else "no design fits it: chosen as without it"
            return f"{budget} for what searches read: {chosen}"
        carried = ", B-trees on prefix and fingerprint" if unbounded.covering else ""
        return (
            f"{budget} for what searches read: {unbounded.plan.blocks} blocks ({unbounded.tables} tables"
            f"{carried}) would be faster but searches would read {unbounded.searched_bytes / 1e9:.3g} GB;"
            " the cheapest design within it is chosen"
        )


def compare(
    rows: int,
    max_distance: int,
    workload: str = "both",
    bits: int = 64,
    memory: float | None = None,
    *,
    coverings: tuple[bool, ...] = (False,),
) -> Comparison:
    """Every design for `rows` and `max_distance` with each of `coverings`, and the one `simdb
    create` would pick (within `memory` bytes, if given)."""
    options = designs(rows, max_distance, bits=bits, coverings=coverings)
    chosen, unbounded = choose(options, workload, memory), choose(options, workload)
    return Comparison(rows, max_distance, workload, options, chosen, bits, memory, unbounded)


def machine_memory() -> float:
    """Three quarters of this machine's physical memory: what an index may count on being cached,
    beside the operating system and the client (0 where the system does not say)."""
    try:
        return 0.75 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0.0
