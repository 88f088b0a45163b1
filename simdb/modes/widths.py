"""How PostgreSQL stores and checks a simhash fingerprint of each width: 64 bits in a bigint,
128 bits in a bit(128). The simhash mode asks its width for every piece of SQL that depends on it.

Each permuted table stores one bigint, its key: the leading 64 bits of the permuted fingerprint
(all of it at 64 bits). A 64-bit index verifies candidates on the permuted value in the table's
B-tree; a 128-bit index carries the fingerprint itself in each B-tree and verifies on that.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

from simdb.bits import parse_hex, to_hex, to_signed, to_unsigned
from simdb.blocks import KEY_BITS, Table
from simdb.simhash import check_bits

BIT_OID = 1560  # pg_type's bit


@dataclass(frozen=True)
class BitString:
    """An unsigned value to send to PostgreSQL as bit(bits) (psycopg has no adapter of its own)."""

    value: int
    bits: int


class _BitTextDumper(Dumper):
    oid = BIT_OID

    def dump(self, obj: BitString) -> bytes:
        return b"X" + format(obj.value, f"0{obj.bits // 4}x").encode("ascii")


class _BitBinaryDumper(Dumper):
    oid = BIT_OID
    format = Format.BINARY

    def dump(self, obj: BitString) -> bytes:
        return struct.pack("!i", obj.bits) + obj.value.to_bytes(obj.bits // 8, "big")


psycopg.adapters.register_dumper(BitString, _BitTextDumper)
psycopg.adapters.register_dumper(BitString, _BitBinaryDumper)


def _moved(table: Table, fingerprint: sql.Composable) -> sql.Composable:
    """SQL expression of the permuted value of a bigint fingerprint (64 bits)."""
    parts = []
    for move in table.moves:
        if move.width >= KEY_BITS:
            return fingerprint
        parts.append(
            sql.SQL("((({fp} >> {source}) & {mask}) << {target})").format(
                fp=fingerprint,
                source=sql.Literal(move.source),
                mask=sql.Literal((1 << move.width) - 1),
                target=sql.Literal(move.target),
            )
        )
    return sql.SQL("({})").format(sql.SQL(" | ").join(parts))


class Width(ABC):
    """One fingerprint width: its SQL type, conversions, and the SQL of keys and checks."""

    bits: ClassVar[int]
    column_type: ClassVar[str]  # the fingerprint column's type
    sketch_type: ClassVar[str]  # the type COPY and function arguments name

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
    def key(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        """The bigint a permuted table stores: the leading 64 bits of the permuted fingerprint."""

    @abstractmethod
    def checked(self, column: str) -> str:
        """The column a table's B-tree carries (besides the row id) to verify candidates on,
        given the table's key column."""

    @abstractmethod
    def wanted(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        """The query's side of that check: the value compared with the checked column."""

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

    def to_sql(self, value: int) -> int:
        return to_signed(value)

    def from_sql(self, value: Any) -> int:
        return to_unsigned(int(value))

    def key(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        return _moved(table, fingerprint)

    def checked(self, column: str) -> str:
        return column  # Hamming distance does not change under a permutation

    def wanted(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        return _moved(table, fingerprint)

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

    def key(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        pieces, left = [], KEY_BITS
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
        return sql.SQL("({})::bit(64)::bigint").format(sql.SQL(" || ").join(pieces))

    def checked(self, column: str) -> str:
        return "fingerprint"

    def wanted(self, table: Table, fingerprint: sql.Composable) -> sql.Composable:
        return fingerprint

    def distance(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        return sql.SQL("bit_count({} # {})::integer").format(a, b)

    def length(self, fingerprint: sql.Composable) -> sql.Composable:
        return sql.SQL("length({})").format(fingerprint)


WIDTHS: dict[int, Width] = {width.bits: width for width in (Width64(), Width128())}


def width(bits: int) -> Width:
    """The width of `bits`-bit fingerprints; InvalidParameter for any other."""
    return WIDTHS[check_bits(bits)]
