"""The simhash mode: 64-bit SimHash fingerprints in permuted block columns, exact within k bits.

near: each permuted column's prefix index is probed for the query's prefix, and candidates are
verified with bit_count on the permuted value inside the index (Hamming distance does not change
under a permutation), so rows that fail are never read. The permuted query values are bit
expressions of the fingerprint parameter, so the whole query is one statement with two
parameters, planned once and cached by PostgreSQL.

pairs (Manku et al.'s batch mode): each permuted column is joined with itself on its prefix,
pairs are verified with bit_count on the permuted values, and pairs found by several tables are
kept once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
from psycopg import sql

from simdb import catalog, names
from simdb.bits import BITS, parse_hex, to_hex, to_signed, to_unsigned
from simdb.blocks import DEFAULT_MAX_DISTANCE, BlockPlan, Table
from simdb.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter
from simdb.modes.base import MISMATCH_HINT, Index, Sketch, Spec
from simdb.planner import WORKLOADS, plan_for
from simdb.simhash import SPEC_VERSION, SPEC_VERSIONS, Features, check_spec, fingerprint

FINGERPRINT = sql.SQL("$1")
MAX_DISTANCE = sql.SQL("$2")
PAIRS_MAX_DISTANCE = sql.SQL("$1")  # the only parameter of the pairs statement


@dataclass(frozen=True)
class SimhashSpec(Spec):
    """Exact search within `max_distance` bits; `blocks` overrides the planner, which plans for
    the index's expected rows and its `workload` (online, batch or both). `fingerprint_spec`:
    the SimHash spec version (v2 unless fingerprints must match ones made under v1)."""

    max_distance: int = DEFAULT_MAX_DISTANCE
    blocks: int | None = None
    workload: str = "both"
    fingerprint_spec: int = SPEC_VERSION

    mode = "simhash"

    def build(self, name: str, features: Features, expected_rows: int) -> SimhashIndex:
        if self.workload not in WORKLOADS:
            raise InvalidParameter(
                f"unknown workload {self.workload!r}", f"use one of {', '.join(WORKLOADS)}"
            )
        chosen = self.blocks
        if chosen is None:
            chosen = plan_for(expected_rows, self.max_distance, self.workload).blocks
        plan = BlockPlan(self.max_distance, chosen)
        return SimhashIndex(name, features, expected_rows, plan, check_spec(self.fingerprint_spec))

    def sketch(self, content: str | bytes, features: Features) -> int:
        return fingerprint(content, features, self.fingerprint_spec)

    def literal(self, value: Sketch) -> str:
        return to_hex(int(value))


def table_column(number: int) -> str:
    """The permuted block column of table `number`: p0, p1, ..."""
    return f"p{number}"


def permuted(table: Table, fingerprint_value: sql.Composable) -> sql.Composable:
    """SQL expression of the table's permuted value of a bigint fingerprint."""
    parts = []
    for move in table.moves:
        if move.width >= BITS:
            return fingerprint_value
        parts.append(
            sql.SQL("((({fp} >> {source}) & {mask}) << {target})").format(
                fp=fingerprint_value,
                source=sql.Literal(move.source),
                mask=sql.Literal((1 << move.width) - 1),
                target=sql.Literal(move.target),
            )
        )
    return sql.SQL("({})").format(sql.SQL(" | ").join(parts))


def prefix(table: Table, value: sql.Composable) -> sql.Composed:
    """The table's prefix of a permuted value: value >> (64 - prefix bits).

    Each table's B-tree is on exactly this expression of its column, so a probe is an
    equality and the batch self-join is a merge join of the index with itself.
    """
    return sql.SQL("{} >> {}").format(value, sql.Literal(table.shift))


def within(a: sql.Composable, b: sql.Composable, k: sql.Composable) -> sql.Composed:
    """bit_count(a XOR b) <= k: the Hamming check, on fingerprints or on permuted values alike."""
    return sql.SQL("bit_count(({} # {})::bit(64)) <= {}").format(a, b, k)


@dataclass(frozen=True)
class SimhashIndex(Index):
    """64-bit SimHash fingerprints in permuted block columns; exact within max_distance bits."""

    plan: BlockPlan
    fingerprint_spec: int = SPEC_VERSION

    mode = "simhash"
    spec_versions = SPEC_VERSIONS
    sketch_column = "fingerprint"
    sketch_type = "int8"
    score_column, score_type = "distance", "integer"
    cutoff_column, cutoff_type = "max_distance", "integer"

    @property
    def spec(self) -> SimhashSpec:
        return SimhashSpec(self.plan.max_distance, self.plan.blocks, fingerprint_spec=self.fingerprint_spec)

    @property
    def spec_version(self) -> int:
        return self.fingerprint_spec

    def upgraded(self) -> Self | None:
        if self.fingerprint_spec == SPEC_VERSION:
            return None
        return dataclasses.replace(self, fingerprint_spec=SPEC_VERSION)

    @property
    def summary(self) -> str:
        prefixes = sorted({t.prefix_bits for t in self.plan.tables})
        return (
            f"max distance {self.plan.max_distance}, {self.plan.blocks} blocks, {len(self.plan.tables)} "
            f"tables (prefix {'/'.join(map(str, prefixes))} bits)"
        )

    def parameters(self) -> dict[str, object]:
        return {
            "max_distance": self.plan.max_distance,
            "blocks": self.plan.blocks,
            "tables": len(self.plan.tables),
            "prefix_bits": [t.prefix_bits for t in self.plan.tables],
        }

    def catalog_values(self, conn: Connection) -> dict[str, object]:
        return {
            "max_distance": self.plan.max_distance,
            "blocks": self.plan.blocks,
            "block_widths": list(self.plan.widths),
            "near_sql": self.near_statement().as_string(conn),
        }

    @classmethod
    def from_catalog(cls, conn: Connection, row: Mapping[str, Any]) -> Self:
        cls.check_stored(row)
        plan = BlockPlan(row["max_distance"], row["blocks"])
        if catalog.block_orders(conn, row["name"]) != plan.orders:
            raise IndexMismatch(
                f"index {row['name']!r} has a table layout this simdb does not compute", MISMATCH_HINT
            )
        features = Features.parse(row["features"])
        return cls(row["name"], features, row["expected_rows"], plan, row["spec_version"])

    def register(self, conn: Connection) -> None:
        """The permuted tables in simdb._tables."""
        catalog.add_tables(
            conn,
            self.name,
            [
                catalog.PermutedTable(number, table_column(number), table.order, table.prefix_bits)
                for number, table in enumerate(self.plan.tables)
            ],
        )

    def to_sql(self, value: Sketch) -> int:
        return to_signed(int(value))

    def from_sql(self, value: Any) -> int:
        return to_unsigned(int(value))

    def random_sketches(self, rng: np.random.Generator, count: int) -> list[Sketch]:
        return [int(v) for v in rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()]

    def parse_sketch(self, text: str) -> int:
        return parse_hex(text)

    def describe_sketch(self, value: Sketch) -> str:
        return f" of {to_hex(int(value))}"

    def checked_distance(self, max_distance: int | None) -> int:
        """The distance to search: the index's k by default; above it exactness is lost, so refuse."""
        k = self.plan.max_distance
        if max_distance is None:
            return k
        if not 0 <= max_distance <= k:
            raise InvalidParameter(
                f"max distance {max_distance} is outside 0..{k} for index {self.name!r}",
                f"an index answers exactly up to the distance it was created with; "
                f"create one with --max-distance {max_distance} for more",
            )
        return max_distance

    def cutoff(self, max_distance: int | None = None, min_similarity: float | None = None) -> int:
        if min_similarity is not None:
            raise self.refuse("a minimum similarity", "it searches by Hamming distance: give --max-distance")
        return self.checked_distance(max_distance)

    def describe_cutoff(self, cutoff: float) -> str:
        return f"within {cutoff} bits"

    def scored(self, score: float) -> tuple[None, int]:
        """The distance only: no similarity, because the share of agreeing bits (1 - d/64) reads
        as "95% similar" for files that share far less; `simdb calibrate` says what a distance
        means in Jaccard on the user's own documents."""
        return None, int(score)

    @property
    def columns(self) -> list[str]:
        """The permuted block columns, one per table: p0, p1, ..."""
        return [table_column(number) for number in range(len(self.plan.tables))]

    def sketch_definition(self) -> sql.Composable:
        return sql.SQL("fingerprint bigint NOT NULL")

    def derived_definitions(self) -> sql.Composable:
        stored = sql.Identifier(self.sketch_column)
        return sql.SQL(", ").join(
            sql.SQL("{} bigint GENERATED ALWAYS AS ({}) STORED").format(
                sql.Identifier(column), permuted(table, stored)
            )
            for column, table in zip(self.columns, self.plan.tables, strict=True)
        )

    def btrees(self) -> list[sql.Composed]:
        """B-tree on each permuted column's prefix, carrying the column and the row id.

        INCLUDE (column, id): a probe verifies candidates with bit_count on the indexed permuted
        value and returns the row id from the index itself (an index-only scan, no rows read).
        """
        return [
            sql.SQL("CREATE INDEX {name} ON {table} (({prefix})) INCLUDE ({column}, id)").format(
                name=sql.Identifier(names.btree_name(self.name, column)),
                table=self.table,
                prefix=prefix(table, sql.Identifier(column)),
                column=sql.Identifier(column),
            )
            for column, table in zip(self.columns, self.plan.tables, strict=True)
        ]

    def near_statement(self) -> sql.Composed:
        """SELECT key, distance of the rows within $2 bits of fingerprint $1, nearest first."""
        probes = []
        for column_name, table in zip(self.columns, self.plan.tables, strict=True):
            column, value = sql.Identifier(column_name), permuted(table, FINGERPRINT)
            probes.append(
                sql.SQL("SELECT id FROM {table} WHERE {stored} = {wanted} AND {check}").format(
                    table=self.table,
                    stored=prefix(table, column),
                    wanted=prefix(table, value),
                    check=within(column, value, MAX_DISTANCE),
                )
            )
        return sql.SQL(
            "SELECT r.key, bit_count((r.fingerprint # {fp})::bit(64))::integer AS distance"
            " FROM {table} AS r WHERE r.id IN ({probes}) ORDER BY 2, 1"
        ).format(fp=FINGERPRINT, table=self.table, probes=sql.SQL(" UNION ALL ").join(probes))

    def pairs_statement(self) -> sql.Composed:
        """SELECT key_a, key_b, distance of every pair of rows within $1 bits, once (key_a < key_b)."""
        joins = []
        for column_name, table in zip(self.columns, self.plan.tables, strict=True):
            column = sql.Identifier(column_name)
            left, right = (sql.SQL("{}.{}").format(sql.Identifier(side), column) for side in "xy")
            joins.append(
                sql.SQL(
                    "SELECT x.id AS a, y.id AS b FROM {table} AS x JOIN {table} AS y"
                    " ON {left_prefix} = {right_prefix} AND x.id < y.id WHERE {check}"
                ).format(
                    table=self.table,
                    left_prefix=prefix(table, left),
                    right_prefix=prefix(table, right),
                    check=within(left, right, PAIRS_MAX_DISTANCE),
                )
            )
        return sql.SQL(
            "SELECT least(a.key, b.key), greatest(a.key, b.key),"
            " bit_count((a.fingerprint # b.fingerprint)::bit(64))::integer"
            " FROM ({joins}) AS p JOIN {table} AS a ON a.id = p.a JOIN {table} AS b ON b.id = p.b"
        ).format(joins=sql.SQL(" UNION ").join(joins), table=self.table)
