"""The SQL both the index and the lookup are made of, from simdb's own simhash index object, so
that the lookup repeats the index's expressions exactly (constants in the SQL text)."""

from __future__ import annotations

import functools

from psycopg import sql

from simdb.bits import to_hex, to_signed
from simdb.blocks import Table
from simdb.modes.simhash import SimhashIndex as Layout
from simdb.modes.simhash import SimhashSpec
from simdb.modes.widths import width
from simdb.simhash import Features


@functools.cache
def layout(name: str, max_distance: int, blocks: int | None, expected_rows: int, bits: int) -> Layout:
    """simdb's simhash index of these settings: its permuted tables and their key expressions
    (computed once per settings: the planner's choice costs milliseconds, a lookup is sub-ms)."""
    return SimhashSpec(max_distance=max_distance, blocks=blocks, bits=bits).build(
        name, Features(), expected_rows
    )


def render(statement: sql.Composable) -> str:
    """SQL text of a composed statement (identifiers quoted, constants literal)."""
    return statement.as_string(None)


def btree_keys(made: Layout, column: str) -> list[str]:
    """Each permuted table's key expression of `column` (SQL text: a quoted column, or a parameter
    placeholder), the constants literal."""
    return [render(key) for key in made.btree_keys(sql.SQL(column))]


def distance(bits: int, a: str, b: str) -> str:
    """The Hamming distance of two fingerprints of this width (SQL texts), as SQL text."""
    return render(width(bits).distance(sql.SQL(a), sql.SQL(b)))


def probe(table: Table, fingerprint: int) -> int:
    """A table's key of an unsigned fingerprint, the bigint its B-tree expression gives the
    fingerprint's column value (the leading bits of the permuted value, at most 64)."""
    return to_signed(table.key(fingerprint) >> table.key_shift)


def db_value(bits: int, fingerprint: int) -> int | str:
    """An unsigned fingerprint as Django sends it: the signed bigint, or a bit(128) as hex text
    ('X...', of no declared type, so that client-side binding adds no cast to bit(1))."""
    return to_signed(fingerprint) if bits == 64 else "X" + to_hex(fingerprint, bits)
