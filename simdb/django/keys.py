"""The SQL both the index and the lookup are made of, from simdb's own simhash and jaccard index
objects, so that the lookup repeats the index's expressions exactly (constants in the SQL text)."""

from __future__ import annotations

import functools

from psycopg import sql

from simdb.index.modes.jaccard import JaccardIndex as JaccardLayout
from simdb.index.modes.jaccard import JaccardSpec
from simdb.index.modes.simhash import SimhashIndex as Layout
from simdb.index.modes.simhash import SimhashSpec
from simdb.index.modes.widths import width
from simdb.plan.blocks import Table
from simdb.sketch.bits import to_hex, to_signed
from simdb.sketch.features import Features
from simdb.sketch.minhash import UInt64Array


@functools.cache
def layout(name: str, max_distance: int, blocks: int | None, expected_rows: int, bits: int) -> Layout:
    """simdb's simhash index of these settings: its permuted tables and their key expressions
    (computed once per settings: the planner's choice costs milliseconds, a lookup is sub-ms)."""
    return SimhashSpec(max_distance=max_distance, blocks=blocks, bits=bits).build(
        name, Features(), expected_rows
    )


@functools.cache
def jaccard_layout(
    name: str, threshold: float, permutations: int, signature_spec: int, expected_rows: int
) -> JaccardLayout:
    """simdb's jaccard index of these settings: its LSH bands and their key expressions, and the
    conversions of its signatures (computed once per settings, as `layout`)."""
    spec = JaccardSpec(threshold=threshold, permutations=permutations, signature_spec=signature_spec)
    return spec.build(name, Features(), expected_rows)


def render(statement: sql.Composable) -> str:
    """SQL text of a composed statement (identifiers quoted, constants literal)."""
    return statement.as_string(None)


def btree_keys(index: Layout | JaccardLayout, column: str) -> list[str]:
    """Each B-tree's key expression (a permuted table's, or an LSH band's) of `column` (SQL
    text: a quoted column, or a parameter placeholder), the constants literal."""
    return [render(key) for key in index.btree_keys(sql.SQL(column))]


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


def estimate(index: JaccardLayout, a: str, b: str) -> str:
    """The Jaccard similarity two signatures estimate (SQL texts), as simdb's own queries verify
    a candidate under the index's signature spec, as SQL text."""
    return render(index.estimate(sql.SQL(a), sql.SQL(b)))


def band_probes(index: JaccardLayout, signature: UInt64Array) -> list[int]:
    """Each band's key of an unsigned signature, the bigint its B-tree expression gives the
    signature's column value."""
    return [to_signed(key) for key in index.band_keys(signature)]
