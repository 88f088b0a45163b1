"""Permuted block tables (Manku, Jain, Das Sarma 2007): pure planning and permutation code.

Split the fingerprint's bits (64 or 128) into b blocks. Two fingerprints within Hamming distance
k agree on at least b - k whole blocks, so for each of the C(b, k) choices of b - k blocks we keep
a copy of the fingerprint with those blocks moved to the front; a query probes each copy for the
entries that share its leading b - k blocks (a prefix range in a B-tree) and verifies the distance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations

from simdb.errors import InvalidParameter

MAX_TABLES = 64
MAX_DISTANCES = {64: 8, 128: 16}  # the largest k served exactly, by fingerprint width
MAX_DISTANCE = MAX_DISTANCES[64]
KEY_BITS = 64  # a table's B-tree key (the leading bits of its permuted value) is one bigint


def block_widths(blocks: int, bits: int = 64) -> tuple[int, ...]:
    """Widths of the blocks, most significant first; the first bits % b blocks get one extra bit."""
    base, extra = divmod(bits, blocks)
    return tuple(base + (1 if j < extra else 0) for j in range(blocks))


@dataclass(frozen=True)
class Move:
    """Copy `width` bits found at `source` (lowest bit's position) to `target` in the permuted value."""

    source: int
    width: int
    target: int


@dataclass(frozen=True)
class Table:
    """One permuted copy: `order` lists block numbers, the leading `b - k` of them form the prefix."""

    order: tuple[int, ...]
    moves: tuple[Move, ...]
    prefix_bits: int
    bits: int = 64

    @property
    def shift(self) -> int:
        """value >> shift is the prefix: the leading `prefix_bits` bits."""
        return self.bits - self.prefix_bits

    @property
    def key_shift(self) -> int:
        """key >> key_shift is the prefix, cut to 64 bits (a superset of the candidates, so still
        exact; past 64 bits a prefix is as selective as anything a table can hold)."""
        return KEY_BITS - min(self.prefix_bits, KEY_BITS)

    @property
    def prefix_moves(self) -> tuple[Move, ...]:
        """The moves of the blocks that form the prefix."""
        return tuple(move for move in self.moves if move.target >= self.shift)

    @property
    def prefix_mask(self) -> int:
        """The fingerprint's bits that form the prefix: two fingerprints share this table's
        prefix if and only if they agree on all of them."""
        return sum(((1 << move.width) - 1) << move.source for move in self.prefix_moves)

    def key(self, value: int) -> int:
        """The leading 64 bits of the permuted value (its prefix, cut as the B-tree's is: >> key_shift)."""
        return self.permute(value) >> (self.bits - KEY_BITS)

    def permute(self, value: int) -> int:
        """The unsigned permuted value of an unsigned fingerprint."""
        out = 0
        for move in self.moves:
            out |= ((value >> move.source) & ((1 << move.width) - 1)) << move.target
        return out

    def prefix(self, value: int) -> int:
        """The prefix of an unsigned fingerprint's permuted value in this table."""
        return self.permute(value) >> self.shift


@dataclass(frozen=True)
class BlockPlan:
    """The C(b, k) permuted tables for `bits`-bit fingerprints, distance k and b blocks."""

    max_distance: int
    blocks: int
    bits: int = 64

    def __post_init__(self) -> None:
        k, b = self.max_distance, self.blocks
        check_distance(k, self.bits)
        if not k < b <= self.bits:
            raise InvalidParameter(
                f"{b} blocks cannot serve max distance {k}",
                f"use more blocks than the distance, from {k + 1} to {self.bits}",
            )
        tables = math.comb(b, k)
        if tables > MAX_TABLES:
            raise InvalidParameter(
                f"{b} blocks at max distance {k} need {tables} tables, more than {MAX_TABLES}",
                "use fewer blocks or a smaller max distance",
            )

    @cached_property
    def widths(self) -> tuple[int, ...]:
        return block_widths(self.blocks, self.bits)

    @cached_property
    def tables(self) -> tuple[Table, ...]:
        """One table per choice of b - k leading blocks, in itertools.combinations order."""
        b, k = self.blocks, self.max_distance
        # Position of each block's lowest bit in the fingerprint (block 0 is most significant).
        lows = [self.bits - sum(self.widths[: j + 1]) for j in range(b)]
        result = []
        for leading in combinations(range(b), b - k):
            order = leading + tuple(j for j in range(b) if j not in leading)
            moves, top = [], self.bits
            for j in order:
                top -= self.widths[j]
                moves.append(Move(source=lows[j], width=self.widths[j], target=top))
            prefix = sum(self.widths[j] for j in leading)
            result.append(Table(order=order, moves=tuple(moves), prefix_bits=prefix, bits=self.bits))
        return tuple(result)

    @property
    def orders(self) -> list[list[int]]:
        """Block orders of all tables, as stored in the catalog."""
        return [list(table.order) for table in self.tables]

    def permuted(self, value: int) -> list[int]:
        """Unsigned permuted values of one fingerprint, one per table."""
        return [table.permute(value) for table in self.tables]


def check_distance(k: int, bits: int = 64) -> None:
    """Exact search is offered for k = 0..8 on 64 bits and 0..16 on 128: past that, an exact plan
    needs more than 64 tables or prefixes so short that every probe returns a large share of the
    rows (`simdb plan` shows what each k costs)."""
    limit, widest = MAX_DISTANCES[bits], max(MAX_DISTANCES)
    if not 0 <= k <= limit:
        wider = f"; {widest}-bit fingerprints (--bits {widest}) serve up to {MAX_DISTANCES[widest]}"
        raise InvalidParameter(
            f"max distance {k} is out of range for {bits}-bit fingerprints",
            f"exact search supports 0 to {limit} bits (beyond that the tables it needs "
            "multiply past 64 or every probe reads a large share of the rows); "
            f"3 is usual for 64-bit SimHash{wider if k <= MAX_DISTANCES[widest] else ''}",
        )
