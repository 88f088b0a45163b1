"""How PostgreSQL stores and checks a simhash fingerprint of each width: 64 bits in a bigint,
128 bits in a bit(128). The simhash mode asks its width for every piece of SQL that depends on it.

Nothing permuted is stored: each permuted table is a B-tree on an expression of the fingerprint,
its prefix (the leading blocks of the permuted value, cut to 64 bits) as a bigint. Candidates are
verified on the fingerprint in the row.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from psycopg import sql

from simdb.db.bit_string import BitString
from simdb.plan.blocks import KEY_BITS, Table
from simdb.sketch.bits import parse_hex, to_hex, to_signed, to_unsigned
from simdb.sketch.features import check_bits


def _shifted(value: sql.Composable, by: int) -> sql.Composable:
    """value << by (by > 0), value >> -by (by < 0), or value itself."""
    if by == 0:
        return value
    operator = "<<" if by > 0 else ">>"
    return sql.SQL("({} {} {})").format(value, sql.SQL(operator), sql.Literal(abs(by)))


class Width(ABC):
    """One fingerprint width: its SQL type, conversions, and the SQL of keys and checks."""

    bits: ClassVar[int]
    column_type: ClassVar[str]  # the fingerprint column's type
    sketch_type: ClassVar[str]  # the type COPY and function arguments name
    # Whether a new index's B-trees carry the fingerprint after the prefix (Index.covering), so
    # that near verifies candidates in the B-tree; a bit(128) would add 24 bytes an entry.
    covering: ClassVar[bool] = False

    def to_hex(self, value: int) -> str:
        """The unsigned value as hex digits (16 or 32), as `simdb fingerprint` prints it."""
        return to_hex(value, self.bits)

    def parse_hex(self, text: str) -> int:
        """Up to 16 or 32 hex digits (optional 0x) as an unsigned value."""
        return parse_hex(text, self.bits)

    def random(self, rng: np.random.Generator, count: int) -> list[int]:
        """`count` random unsigned fingerprints of this width."""
        words = rng.integers(0, 2**64, size=(count, self.bits // 64), dtype=np.uint64).tolist()
        return [sum(int(word) << (64 * j) for j, word in enumerate(row)) for row in words]

    @abstractmethod
    def to_sql(self, value: int) -> Any:
        """An unsigned fingerprint as psycopg sends it for this width's column type."""

    @abstractmethod
    def from_sql(self, value: Any) -> int:
        """A stored fingerprint back as an unsigned int."""

    @abstractmethod
    def prefix(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        """A table's prefix of a fingerprint as a bigint: the leading blocks of its permuted value
        (at most 64 bits; a longer prefix is cut, which only adds candidates). Each table's B-tree
        is on exactly this expression of the fingerprint column, and probes compare it."""

    @abstractmethod
    def distance(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        """The Hamming distance of two values of this width, as an SQL integer."""

    def length(self, fingerprint: sql.Composable) -> sql.Composable | None:
        """SQL of a given fingerprint's length, where its type lets it differ from `bits`."""
        return None


class Width64(Width):
    """A bigint holding the unsigned value's bits; the permuted table stores the whole permuted value."""

    bits = 64
    column_type = sketch_type = "bigint"
    covering = True  # (8 more bytes an entry)

    def to_sql(self, value: int) -> int:
        return to_signed(value)

    def from_sql(self, value: Any) -> int:
        return to_unsigned(int(value))

    def prefix(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        if table.shift == 0 and len(table.moves) == 1:
            return fingerprint  # one 64-bit block (k = 0)
        parts = [
            _shifted(
                sql.SQL("({} & {})").format(
                    _shifted(fingerprint, -move.source), sql.Literal((1 << move.width) - 1)
                ),
                move.target - table.shift,
            )
            for move in table.moves
            if move.target >= table.shift  # the blocks of the prefix
        ]
        return sql.SQL("({})").format(sql.SQL(" | ").join(parts))

    def distance(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        return sql.SQL("bit_count(({} # {})::bit(64))::integer").format(a, b)


class Width128(Width):
    """A bit(128), most significant bit first; each table's key is a bigint of its leading 64 bits."""

    bits = 128
    column_type = "bit(128)"
    sketch_type = "bit"

    def to_sql(self, value: int) -> BitString:
        return BitString(value, self.bits)

    def from_sql(self, value: Any) -> int:
        return value.value if isinstance(value, BitString) else int(str(value), 2)

    def prefix(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        pieces, left = [], min(table.prefix_bits, KEY_BITS)
        for move in table.moves:  # in the permuted order, most significant first
            width = min(move.width, left)
            start = self.bits - move.source - move.width + 1  # bit strings count from 1, left first
            pieces.append(
                sql.SQL("substring({} from {} for {})").format(
                    fingerprint, sql.Literal(start), sql.Literal(width)
                )
            )
            left -= width
            if left == 0:
                break
        cut = min(table.prefix_bits, KEY_BITS)
        return sql.SQL("({})::bit({})::bigint").format(sql.SQL(" || ").join(pieces), sql.Literal(cut))

    def distance(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        return sql.SQL("bit_count({} # {})::integer").format(a, b)

    def length(self, fingerprint: sql.Composable) -> sql.Composable:
        return sql.SQL("length({})").format(fingerprint)


WIDTHS: dict[int, Width] = {width.bits: width for width in (Width64(), Width128())}


def width(bits: int) -> Width:
    """The width of `bits`-bit fingerprints; InvalidParameter for any other."""
    return WIDTHS[check_bits(bits)]
