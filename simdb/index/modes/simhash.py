"""The simhash mode: 64- or 128-bit SimHash fingerprints in permuted block columns, exact within
k bits. What depends on the width (column type, prefixes, checks) is asked of modes/widths.py.

A row is its key (the primary key) and its fingerprint; each permuted table is a B-tree on an
expression of the fingerprint, the table's prefix (layout v2: nothing permuted is stored).

near: every table's prefix of the row equal to the query's, which PostgreSQL answers with one
bitmap scan per B-tree, OR-ed; candidates are verified with bit_count on the row. The query's
prefixes are expressions of the fingerprint parameter, so the statement has two parameters and
is planned once per session.

pairs (Manku et al.'s batch mode): each table's prefix joined with itself, pairs verified with
bit_count and kept once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self, cast

import numpy as np
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter
from simdb.index import catalog, rowscan
from simdb.index.modes.base import CUTOFF, MISMATCH_HINT, SKETCH, Index, Sketch, Spec
from simdb.index.modes.widths import Width, width
from simdb.index.placement import first_shared
from simdb.plan import pairing, reach
from simdb.plan.blocks import BlockPlan
from simdb.plan.planner import WORKLOADS, design_for, machine_memory
from simdb.sketch.features import WIDTHS, Content, Features, check_bits
from simdb.sketch.simhash import (
    FINGERPRINT_METHODS,
    NEW_INDEX_SPEC,
    SPEC_VERSION,
    SPEC_VERSIONS,
    FingerprintMethod,
    check_spec,
    fingerprint,
    fingerprints,
)

PAIRS_MAX_DISTANCE = sql.SQL("$1")  # the only parameter of the pairs statement


@dataclass(frozen=True)
class SimhashSpec(Spec):
    """Exact search within `max_distance` bits (None: the fingerprint spec's own k); `blocks`
    overrides the planner, which plans for the index's expected rows and its `workload` (online,
    batch or both). `fingerprint_spec`: the fingerprint spec version (v3 one-bit MinHash, which
    finds copies with a line changed; v2 SimHash, close copies, the dataclass's default, kept for
    code written before; v1 only to match fingerprints made under it; None, what `newest()` and
    the CLI ask for: v3, or v2 in a column the application fills, as simdb.fingerprint computes
    it); `bits`: the fingerprint's width, 64 or 128; `covering`: B-trees on prefix and
    fingerprint (True), on the prefix alone (False), or as the planner prices them (None)."""

    max_distance: int | None = None
    blocks: int | None = None
    workload: str = "both"
    fingerprint_spec: int | None = SPEC_VERSION
    bits: int = 64
    covering: bool | None = None

    mode = "simhash"

    @classmethod
    def newest(cls, **given: Any) -> SimhashSpec:
        """One-bit MinHash within 5 bits unless given otherwise (a fingerprint spec given alone
        keeps its own k: --fingerprint-spec 2 is SimHash within 3)."""
        return cls(**{"fingerprint_spec": None, **given})

    @property
    def version(self) -> int:
        """The fingerprint spec version the index computes."""
        return NEW_INDEX_SPEC if self.fingerprint_spec is None else self.fingerprint_spec

    def for_column(self) -> SimhashSpec:
        """An application's column keeps what simdb.fingerprint computes unless told otherwise."""
        if self.fingerprint_spec is not None:
            return self
        return dataclasses.replace(self, fingerprint_spec=SPEC_VERSION)

    def in_application_table(self) -> SimhashSpec:
        """B-trees on the prefix alone, as an application's migrations make them."""
        if self.covering:
            raise InvalidParameter(
                "B-trees that carry the fingerprint are made in simdb's own tables only",
                "leave covering unset for an index in the application's table (its B-trees are on the"
                " prefix alone, as its migrations make them)",
            )
        return dataclasses.replace(self, covering=False)

    def build(self, name: str, features: Features, expected_rows: int) -> SimhashIndex:
        if self.workload not in WORKLOADS:
            raise InvalidParameter(
                f"unknown workload {self.workload!r}", f"use one of {', '.join(WORKLOADS)}"
            )
        bits = check_bits(self.bits)
        k = self.k
        coverings = (False, True) if width(bits).covering else (False,)
        if self.covering is not None:
            if self.covering not in coverings:
                raise InvalidParameter(
                    f"B-trees that carry a {bits}-bit fingerprint are not made",
                    "leave covering unset for these fingerprints (64-bit ones may have them)",
                )
            coverings = (self.covering,)
        design = design_for(
            expected_rows, k, self.workload, bits, machine_memory(), coverings=coverings, blocks=self.blocks
        )
        return SimhashIndex(
            name, features, expected_rows, design.plan, check_spec(self.version), covering=design.covering
        )

    @property
    def k(self) -> int:
        """The k of the index: the one given, else the fingerprint method's."""
        if self.max_distance is not None:
            return self.max_distance
        return FINGERPRINT_METHODS[check_spec(self.version)].max_distance

    def sketch(self, content: Content, features: Features) -> int:
        return fingerprint(content, features, self.version, self.bits)

    def sketches(self, contents: list[Content], features: Features) -> list[Sketch | None]:
        return list(fingerprints(contents, features, self.version, self.bits))

    def literal(self, value: Sketch) -> str:
        return width(self.bits).to_hex(int(value))


def table_column(number: int) -> str:
    """The key column of permuted table `number`: p0, p1, ..."""
    return f"p{number}"


@dataclass(frozen=True)
class SimhashIndex(Index):
    """SimHash fingerprints in permuted block columns; exact within max_distance bits."""

    plan: BlockPlan
    fingerprint_spec: int = SPEC_VERSION

    mode = "simhash"
    widths = WIDTHS
    spec_versions = SPEC_VERSIONS
    sketch_column = "fingerprint"
    score_column, score_type = "distance", "integer"
    cutoff_column, cutoff_type = "max_distance", "integer"

    @property
    def width(self) -> Width:
        return width(self.plan.bits)

    @property
    def bits(self) -> int:
        return self.plan.bits

    @property
    def sketch_size(self) -> int:
        return self.bits

    @property
    def column_type(self) -> str:
        return self.width.column_type

    def sketch_check(self, sketch: sql.Composable) -> sql.Composable:
        """A bit string of another length is refused (only bit(128) fingerprints can be wrong)."""
        length = self.width.length(sketch)
        if length is None:
            return super().sketch_check(sketch)
        return self._refusal(
            sql.SQL("{} <> {}").format(length, sql.Literal(self.bits)),
            sql.SQL("'bit(' || {} || ')'").format(length),
            self.width.column_type,
        )

    @property
    def sketch_type(self) -> str:
        return self.width.sketch_type

    @property
    def spec(self) -> SimhashSpec:
        return SimhashSpec(
            self.plan.max_distance,
            self.plan.blocks,
            fingerprint_spec=self.fingerprint_spec,
            bits=self.bits,
            covering=self.covering,
        )

    @property
    def spec_version(self) -> int:
        return self.fingerprint_spec

    def upgraded(self) -> Self | None:
        """v1 moves to the newest SimHash, v2, at the same k; v2 and v3 (one-bit MinHash, which
        is another method with another k) are kept."""
        if self.fingerprint_spec >= SPEC_VERSION:
            return None
        return dataclasses.replace(self, fingerprint_spec=SPEC_VERSION)

    @property
    def method(self) -> FingerprintMethod:
        """What the index's fingerprint spec version is: its name, computation and bit model."""
        return FINGERPRINT_METHODS[self.fingerprint_spec]

    @property
    def finds(self) -> str:
        return self.reach.words()

    @property
    def reach(self) -> reach.Reach:
        """What the index finds: the Jaccard similarity of nine in ten of its finds (simdb.plan.reach)."""
        words = self.features.n if self.features.kind == "word" else None
        return reach.of(self.bits, self.plan.max_distance, self.method.bit_difference, words)

    def nearest_scan(self) -> sql.Composed:
        distance = self.width.distance(sql.Identifier(self.sketch_column), sql.Placeholder())
        return sql.SQL(
            "SELECT key, {distance} AS distance FROM {table} WHERE {sketch} IS NOT NULL"
            " AND key IS DISTINCT FROM %s ORDER BY 2, key LIMIT 1"
        ).format(distance=distance, table=self.table, sketch=sql.Identifier(self.sketch_column))

    def jaccard_at(self, score: Any) -> float:
        return reach.jaccard_at(self.bits, int(score), self.method.bit_difference)

    @property
    def summary(self) -> str:
        prefixes = "/".join(map(str, sorted({t.prefix_bits for t in self.plan.tables})))
        return (
            f"{self.bits}-bit {self.method.name}, max distance {self.plan.max_distance}, "
            f"{self.plan.blocks} blocks, {len(self.plan.tables)} tables (prefix {prefixes} bits)"
        )

    def parameters(self) -> dict[str, object]:
        return {
            "bits": self.bits,
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
            **({"covering": True} if self.covering else {}),  # (the column's default, and before 0020 none)
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any], block_orders: list[list[int]]) -> Self:
        cls.check_stored(row)
        plan = BlockPlan(row["max_distance"], row["blocks"], row["bits"])
        if block_orders != plan.orders:
            raise IndexMismatch(
                f"index {row['name']!r} has a table layout this simdb does not compute", MISMATCH_HINT
            )
        features = Features.parse(row["features"])
        covering = bool(row.get("covering"))  # (no such column before revision 0020)
        return cls(row["name"], features, row["expected_rows"], plan, row["spec_version"], covering=covering)

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

    def to_sql(self, value: Sketch) -> Any:
        return self.width.to_sql(int(value))

    def from_sql(self, value: Any) -> int:
        return self.width.from_sql(value)

    def random_sketches(self, rng: np.random.Generator, count: int) -> list[Sketch]:
        return list(self.width.random(rng, count))

    def parse_sketch(self, text: str) -> int:
        return self.width.parse_hex(text)

    def parse_given(self, value: object) -> int:
        """Hex digits as `simdb fingerprint` prints them (a string), or an integer: unsigned, or
        signed as PostgreSQL's bigint stores it."""
        bits: int = self.width.bits
        if isinstance(value, str):
            return self.width.parse_hex(value)
        if isinstance(value, int) and not isinstance(value, bool) and -(2 ** (bits - 1)) <= value < 2**bits:
            return int(value % 2**bits)
        raise InvalidParameter(
            f"bad {bits}-bit fingerprint {value!r}",
            f"give hex digits as a string, or an integer from -2^{bits - 1} to 2^{bits}-1",
        )

    def describe_sketch(self, value: Sketch) -> str:
        return f" of {self.width.to_hex(int(value))}"

    def checked_distance(self, max_distance: int | None) -> int:
        """The distance to search: the index's k by default; above it exactness is lost, so refuse."""
        k = self.plan.max_distance
        if max_distance is None:
            return k
        if max_distance < 0:
            raise InvalidParameter(
                f"max distance {max_distance} is negative", f"give a distance from 0 to {k} (bits)"
            )
        if max_distance > k:
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

    def compared(self, a: Sketch, b: Sketch) -> tuple[None, int]:
        """The Hamming distance of two fingerprints (any width)."""
        return None, (cast(int, a) ^ cast(int, b)).bit_count()

    @property
    def columns(self) -> list[str]:
        """The permuted tables' key columns, one per table: p0, p1, ..."""
        return [table_column(number) for number in range(len(self.plan.tables))]

    def sketch_definition(self) -> sql.Composable:
        return sql.SQL("fingerprint {} NOT NULL").format(sql.SQL(self.width.column_type))

    def btree_keys(self, sketch: sql.Composable) -> list[sql.Composable]:
        """Each permuted table's prefix of a fingerprint."""
        return [self.width.prefix(table, sketch) for table in self.plan.tables]

    nearest_first = sql.SQL("ORDER BY 2, 1")

    def score(self, stored: sql.Composable, query: sql.Composable) -> sql.Composable:
        return self.width.distance(stored, query)

    def keeps(self, score: sql.Composable, cutoff: sql.Composable) -> sql.Composable:
        return sql.SQL("{} <= {}").format(score, cutoff)

    def table_near_statement(
        self, sketch: sql.Composable = SKETCH, cutoff: sql.Composable = CUTOFF
    ) -> sql.Composed:
        """SELECT key, distance of the rows within `cutoff` bits of fingerprint `sketch`, nearest
        first: any table's prefix equal (one bitmap scan of each B-tree, OR-ed), then bit_count on
        the row; where the B-trees carry the fingerprint (on one server), bit_count on their
        entries instead (index_only_near_statement)."""
        if self.covering and self.placement.index_only_near:
            return self.index_only_near_statement(sketch, cutoff)
        stored = sql.SQL("r.{}").format(sql.Identifier(self.sketch_column))
        distance = self.width.distance(stored, sketch)
        return sql.SQL(
            "SELECT r.key, {distance} AS distance FROM {table} AS r"
            " WHERE ({probes}) AND {distance} <= {k} AND {check} {order}"
        ).format(
            order=self.nearest_first,
            check=self.sketch_check(sketch),
            distance=distance,
            table=self.table,
            probes=sql.SQL(" OR ").join(
                sql.SQL("{} = {}").format(row, query)
                for row, query in zip(self.btree_keys(stored), self.btree_keys(sketch), strict=True)
            ),
            k=cutoff,
        )

    def index_only_near_statement(self, sketch: sql.Composable, cutoff: sql.Composable) -> sql.Composed:
        """table_near_statement over B-trees on (prefix, fingerprint): each table's entries under
        the query's prefix verified with bit_count in the B-tree (an index-only scan: at 100M rows
        the ~1,500 candidates of a 16-bit prefix are a few pages there, against as many table
        pages), the distinct fingerprints found then looked up in table 0's B-tree for their rows
        (the only rows read; OFFSET 0 keeps that a lookup per fingerprint found, never a join
        with a scan of the table). Aliases c, h and r: the caller may name its own rows f."""
        fingerprint = sql.Identifier(self.sketch_column)
        found = sql.SQL("c.{}").format(fingerprint)
        hit = sql.SQL("h.{}").format(fingerprint)
        row = sql.SQL("r.{}").format(fingerprint)
        probes = sql.SQL(" UNION ").join(
            sql.SQL("SELECT {found} FROM {table} AS c WHERE {prefix} = {query} AND {distance} <= {k}").format(
                found=found,
                table=self.table,
                prefix=prefix,
                query=query,
                distance=self.width.distance(found, sketch),
                k=cutoff,
            )
            for prefix, query in zip(self.btree_keys(found), self.btree_keys(sketch), strict=True)
        )
        first = self.plan.tables[0]
        return sql.SQL(
            "SELECT r.key, {distance} AS distance FROM ({probes}) AS h CROSS JOIN LATERAL"
            " (SELECT r.key, {row} FROM {table} AS r WHERE {row_prefix} = {hit_prefix} AND {row} = {hit}"
            " OFFSET 0) AS r WHERE {check} {order}"
        ).format(
            distance=self.width.distance(row, sketch),
            probes=probes,
            row=row,
            table=self.table,
            row_prefix=self.width.prefix(first, row),
            hit_prefix=self.width.prefix(first, hit),
            hit=hit,
            check=self.sketch_check(sketch),
            order=self.nearest_first,
        )

    def pairs_in_memory(
        self, conn: Connection, cutoff: float, jobs: int = 1, fresh: rowscan.Where | None = None
    ) -> tuple[sql.Composed, Iterator[list[Any]]] | None:
        """Each table's prefixes sorted, runs compared with bit_count (64-bit fingerprints only),
        a range of prefixes at a time: memory holds the fingerprints and addresses (10 bytes a
        row) and one range per thread; a batch of pairs for each range. The tables are those
        that pair these rows fastest (pairing.pairing_plan), not necessarily the index's. With
        `fresh`, only the pairs of the rows where it holds (pairing.within_fresh)."""
        if self.bits != 64:
            return None
        stored = sql.Identifier(self.sketch_column)
        with pairing.loading_kernels():
            rows = self.placement.read_column(conn, self.table, sql.SQL("r.{}").format(stored), jobs)
            chosen = None if fresh is None else rowscan.addresses(conn, self.table, fresh)
        fingerprints = rows.values.view(np.uint64)
        if chosen is None:
            plan = pairing.pairing_plan(len(fingerprints), int(cutoff))  # (its own tables: none is read)
            found = pairing.within_by_ranges(fingerprints, plan, int(cutoff), jobs)
        else:
            found = pairing.within_fresh(fingerprints, rows.positions(chosen), int(cutoff), jobs)
        distance = self.width.distance(sql.SQL("a.{}").format(stored), sql.SQL("b.{}").format(stored))
        statement = self.placement.pairs_of(self.table, distance, sql.SQL("true"))
        return statement, ([rows.at(first), rows.at(second)] for first, second in found if len(first))

    def pairs_statement(self, rows: sql.Composable) -> sql.Composed:
        """SELECT key_a, key_b, distance of every pair of rows within $1 bits, once (key_a < key_b):
        each table's prefix joined with itself, a pair kept by the first table whose prefix it
        shares (placement.first_shared: no sort or hash of all the pairs to remove repeats)."""
        x = sql.SQL("x.{}").format(sql.Identifier(self.sketch_column))
        y = sql.SQL("y.{}").format(sql.Identifier(self.sketch_column))
        distance = self.width.distance(x, y)
        joins = [
            sql.SQL(
                "SELECT x.key, y.key, {distance} FROM {table} AS x JOIN {table} AS y ON {left} = {right}"
                " WHERE {distance} <= {k} AND x.key < y.key AND {first} = {number}"
            ).format(
                distance=distance,
                table=rows,
                left=left,
                right=right,
                k=PAIRS_MAX_DISTANCE,
                first=first_shared(self, x, y),
                number=sql.Literal(number),
            )
            for number, (left, right) in enumerate(zip(self.btree_keys(x), self.btree_keys(y), strict=True))
        ]
        return sql.SQL(" UNION ALL ").join(joins)
