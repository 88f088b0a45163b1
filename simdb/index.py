"""Indexes: the catalog row with every parameter, and the table simdb."NAME" with its B-trees.

One concept, two modes: a simhash index keeps 64-bit fingerprints in permuted block columns
(exact within k bits); a jaccard index keeps MinHash signatures with LSH band-key columns.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.numeric import Int8

from simdb.bits import BITS, to_signed, to_unsigned
from simdb.blocks import DEFAULT_MAX_DISTANCE, BlockPlan
from simdb.connection import Connection
from simdb.errors import IndexExists, IndexMismatch, IndexNotFound, InvalidParameter
from simdb.minhash import (
    DEFAULT_PERMUTATIONS,
    DEFAULT_THRESHOLD,
    MINHASH_SPEC_VERSION,
    Banding,
    UInt64Array,
    choose_banding,
    document_signature,
)
from simdb.planner import DEFAULT_EXPECTED_ROWS, plan_for
from simdb.schema import SCHEMA
from simdb.simhash import DEFAULT_FEATURES, SPEC_VERSION, EmptyDocument, Features, fingerprint
from simdb.sqlgen import (
    clusters_table,
    create_block_index,
    create_near_function,
    create_pairs_function,
    near_function,
    near_statement,
    pairs_function,
    pairs_statement,
    permuted,
    table_column,
)
from simdb.sqlgen_jaccard import band_column, band_columns, create_band_index, signature_check
from simdb.sqlgen_jaccard import create_near_function as create_near_jaccard
from simdb.sqlgen_jaccard import create_pairs_function as create_pairs_jaccard
from simdb.sqlgen_jaccard import near_statement as near_jaccard
from simdb.sqlgen_jaccard import pairs_statement as pairs_jaccard

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
# NAME__near, NAME__pairs, NAME__clusters belong to index NAME, so names never contain "__".
RESERVED_SEPARATOR = "__"


def check_name(name: str) -> str:
    """Index names are plain lower-case identifiers, so SQL users never need to quote them."""
    if not NAME_PATTERN.fullmatch(name) or RESERVED_SEPARATOR in name:
        raise InvalidParameter(
            f"bad index name {name!r}",
            "use 1 to 40 characters: a lower-case letter, then letters, digits or single '_'",
        )
    return name


Sketch = int | UInt64Array  # an unsigned SimHash fingerprint, or a MinHash signature
SqlSketch = int | list[int]  # the same as stored: signed bigint, or bigint[]
MODES = ("simhash", "jaccard")


@dataclass(frozen=True)
class Index(ABC):
    """An index's parameters as stored in the catalog; SimhashIndex and JaccardIndex add their own."""

    name: str
    features: Features
    expected_rows: int

    mode: ClassVar[str]
    spec_version: ClassVar[int]  # of the fingerprint or signature spec
    sketch_column: ClassVar[str]  # the column holding each row's fingerprint or signature
    sketch_type: ClassVar[str]  # its PostgreSQL type, for binary COPY
    score_column: ClassVar[str]  # what the near and pairs functions rank by
    cutoff_column: ClassVar[str]  # the name and type of a search's bound, as the clusters table records it
    cutoff_type: ClassVar[str]

    @property
    @abstractmethod
    def columns(self) -> list[str]:
        """The B-tree indexed columns derived from the sketch: p0, p1, ... or b0, b1, ..."""

    @abstractmethod
    def sketch(self, content: str | bytes) -> Sketch:
        """A document's fingerprint or signature; raises EmptyDocument if it has no shingles."""

    def sketches(self, contents: list[str | bytes]) -> list[Sketch | None]:
        """Sketches of many documents (None for an empty one): the unit of work of a worker."""
        result: list[Sketch | None] = []
        for content in contents:
            try:
                result.append(self.sketch(content))
            except EmptyDocument:
                result.append(None)
        return result

    @abstractmethod
    def to_sql(self, value: Sketch) -> SqlSketch:
        """A sketch as PostgreSQL stores it (signed bigint bits)."""

    @abstractmethod
    def from_sql(self, value: SqlSketch) -> Sketch:
        """A stored sketch back in Python's unsigned form."""

    @abstractmethod
    def cutoff(self, max_distance: int | None = None, min_similarity: float | None = None) -> int | float:
        """The checked bound of a search: a Hamming distance or a minimum similarity, by mode."""

    @abstractmethod
    def describe_cutoff(self, cutoff: float) -> str:
        """'within 3 bits' or 'at similarity >= 0.8', for messages."""

    @abstractmethod
    def catalog(self, conn: Connection) -> dict[str, object]:
        """The catalog columns of this mode (simdb._indexes), with the index's near statement."""

    @abstractmethod
    def create_objects(self, conn: Connection, near_sql: str) -> None:
        """The index's table, its B-trees and its functions (after its catalog row)."""

    @abstractmethod
    def btrees(self) -> list[sql.Composed]:
        """CREATE INDEX for each derived column (named NAME_<column>)."""

    @property
    @abstractmethod
    def summary(self) -> str:
        """The parameters of this mode in a few words."""

    @abstractmethod
    def parameters(self) -> dict[str, object]:
        """The parameters of this mode, for JSON."""

    def _refuse(self, what: str, instead: str) -> InvalidParameter:
        return InvalidParameter(f"{what} does not apply to {self.mode} index {self.name!r}", instead)

    @property
    def table(self) -> sql.Identifier:
        """simdb."NAME", quoted for psycopg.sql."""
        return sql.Identifier(SCHEMA, self.name)

    @property
    def near_function(self) -> sql.Identifier:
        """simdb."NAME__near"(sketch, cutoff): the index's near query."""
        return sql.Identifier(SCHEMA, near_function(self.name))

    @property
    def pairs_function(self) -> sql.Identifier:
        """simdb."NAME__pairs"(cutoff): every pair within the cutoff."""
        return sql.Identifier(SCHEMA, pairs_function(self.name))

    def _create_table(self, conn: Connection, sketch: sql.Composable, derived: sql.Composable) -> None:
        """simdb."NAME" with the sketch column and the generated columns derived from it.

        The derived columns are computed by PostgreSQL, so any application can insert
        (key, sketch) in plain SQL and get the same values simdb would compute.
        """
        conn.execute(
            sql.SQL(
                "CREATE TABLE {table} ("
                " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                " key text NOT NULL UNIQUE,"
                " {sketch},"
                " size bigint,"
                " content_hash bytea,"
                " extension text,"
                " {derived},"
                " added_at timestamptz NOT NULL DEFAULT now())"
            ).format(table=self.table, sketch=sketch, derived=derived)
        )


@dataclass(frozen=True)
class SimhashIndex(Index):
    """64-bit SimHash fingerprints in permuted block columns; exact within max_distance bits."""

    plan: BlockPlan

    mode = "simhash"
    spec_version = SPEC_VERSION
    sketch_column = "fingerprint"
    sketch_type = "int8"
    score_column = "distance"
    cutoff_column, cutoff_type = "max_distance", "integer"

    @classmethod
    def planned(
        cls,
        name: str,
        features: Features = DEFAULT_FEATURES,
        expected_rows: int = DEFAULT_EXPECTED_ROWS,
        max_distance: int = DEFAULT_MAX_DISTANCE,
        blocks: int | None = None,
        workload: str = "both",
    ) -> SimhashIndex:
        """A new index's parameters; without `blocks` the planner picks b (not stored yet: `save`)."""
        chosen = blocks if blocks is not None else plan_for(expected_rows, max_distance, workload).blocks
        return cls(name, features, expected_rows, BlockPlan(max_distance, chosen))

    @property
    def columns(self) -> list[str]:
        """The permuted block columns, one per table: p0, p1, ..."""
        return [table_column(number) for number in range(len(self.plan.tables))]

    def sketch(self, content: str | bytes) -> int:
        return fingerprint(content, self.features)

    def to_sql(self, value: Sketch) -> int:
        return to_signed(int(value))

    def from_sql(self, value: SqlSketch) -> int:
        return to_unsigned(int(value))  # type: ignore[arg-type]

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
            raise self._refuse("a minimum similarity", "it searches by Hamming distance: give --max-distance")
        return self.checked_distance(max_distance)

    def describe_cutoff(self, cutoff: float) -> str:
        return f"within {cutoff} bits"

    def catalog(self, conn: Connection) -> dict[str, object]:
        plan = self.plan
        return {
            "max_distance": plan.max_distance,
            "blocks": plan.blocks,
            "block_widths": list(plan.widths),
            "near_sql": near_statement(self.name, plan).as_string(conn),
        }

    def create_objects(self, conn: Connection, near_sql: str) -> None:
        plan = self.plan
        for number, table in enumerate(plan.tables):
            conn.execute(
                "INSERT INTO simdb._tables (index_name, table_no, column_name, block_order,"
                " prefix_bits) VALUES (%s, %s, %s, %s, %s)",
                (self.name, number, table_column(number), list(table.order), table.prefix_bits),
            )
        fingerprint_column = sql.Identifier("fingerprint")
        generated = sql.SQL(", ").join(
            sql.SQL("{} bigint GENERATED ALWAYS AS ({}) STORED").format(
                sql.Identifier(table_column(number)), permuted(table, fingerprint_column)
            )
            for number, table in enumerate(plan.tables)
        )
        self._create_table(conn, sql.SQL("fingerprint bigint NOT NULL"), generated)
        for statement in self.btrees():
            conn.execute(statement)
        conn.execute(create_near_function(self.name, near_sql))
        conn.execute(create_pairs_function(self.name, pairs_statement(self.name, plan).as_string(conn)))

    def parameters(self) -> dict[str, object]:
        return {
            "max_distance": self.plan.max_distance,
            "blocks": self.plan.blocks,
            "tables": len(self.plan.tables),
            "prefix_bits": [t.prefix_bits for t in self.plan.tables],
        }

    def btrees(self) -> list[sql.Composed]:
        return [create_block_index(self.name, number, table) for number, table in enumerate(self.plan.tables)]

    @property
    def summary(self) -> str:
        prefixes = sorted({t.prefix_bits for t in self.plan.tables})
        return (
            f"max distance {self.plan.max_distance}, {self.plan.blocks} blocks, {len(self.plan.tables)} "
            f"tables (prefix {'/'.join(map(str, prefixes))} bits)"
        )


@dataclass(frozen=True)
class JaccardIndex(Index):
    """MinHash signatures with LSH band-key columns; pairs at or above a Jaccard threshold."""

    threshold: float
    permutations: int
    banding: Banding

    mode = "jaccard"
    spec_version = MINHASH_SPEC_VERSION
    sketch_column = "signature"
    sketch_type = "int8[]"
    score_column = "similarity"
    cutoff_column, cutoff_type = "min_similarity", "double precision"

    @classmethod
    def banded(
        cls,
        name: str,
        features: Features = DEFAULT_FEATURES,
        expected_rows: int = DEFAULT_EXPECTED_ROWS,
        threshold: float = DEFAULT_THRESHOLD,
        permutations: int = DEFAULT_PERMUTATIONS,
    ) -> JaccardIndex:
        """A new index's parameters with the bands chosen for them (not stored yet: `save`)."""
        return cls(
            name, features, expected_rows, threshold, permutations, choose_banding(threshold, permutations)
        )

    @property
    def columns(self) -> list[str]:
        """The band-key columns, one per band: b0, b1, ..."""
        return [band_column(number) for number in range(self.banding.bands)]

    def sketch(self, content: str | bytes) -> UInt64Array:
        return document_signature(content, self.features, self.permutations)

    def to_sql(self, value: Sketch) -> list[int]:
        values = np.asarray(value, dtype=np.uint64)
        if values.shape != (self.permutations,):
            raise InvalidParameter(
                f"a signature of {values.size} values for index {self.name!r}, which has "
                f"{self.permutations} permutations",
                "compute signatures with the index's own settings",
            )
        # Int8: psycopg then sends bigint[] (a plain list of large ints goes as numeric[], which
        # the server must convert on every query: 0.3 ms of a 1 ms query here).
        return [Int8(v) for v in values.view(np.int64).tolist()]

    def from_sql(self, value: SqlSketch) -> UInt64Array:
        return np.array(value, dtype=np.int64).view(np.uint64)

    def checked_similarity(self, min_similarity: float | None) -> float:
        """The similarity to search for: the index's threshold by default, up to 1."""
        if min_similarity is None:
            return self.threshold
        if not self.threshold <= min_similarity <= 1:
            raise InvalidParameter(
                f"min similarity {min_similarity} is outside {self.threshold:g}..1 for index {self.name!r}",
                "a jaccard index finds pairs at or above the threshold it was created with; "
                f"create one with --threshold {min_similarity} for lower",
            )
        return min_similarity

    def cutoff(self, max_distance: int | None = None, min_similarity: float | None = None) -> float:
        if max_distance is not None:
            raise self._refuse("a Hamming distance", "it searches by Jaccard similarity: give --threshold")
        return self.checked_similarity(min_similarity)

    def describe_cutoff(self, cutoff: float) -> str:
        return f"at similarity >= {cutoff:g}"

    def catalog(self, conn: Connection) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "permutations": self.permutations,
            "bands": self.banding.bands,
            "band_rows": self.banding.rows,
            "near_sql": near_jaccard(self.name, self.banding, self.permutations).as_string(conn),
        }

    def create_objects(self, conn: Connection, near_sql: str) -> None:
        signature_column = sql.SQL("signature bigint[] NOT NULL {}").format(
            signature_check(self.permutations)
        )
        self._create_table(conn, signature_column, band_columns(self.banding))
        for statement in self.btrees():
            conn.execute(statement)
        conn.execute(create_near_jaccard(self.name, near_sql))
        conn.execute(
            create_pairs_jaccard(
                self.name, pairs_jaccard(self.name, self.banding, self.permutations).as_string(conn)
            )
        )

    def parameters(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "permutations": self.permutations,
            "bands": self.banding.bands,
            "band_rows": self.banding.rows,
        }

    def btrees(self) -> list[sql.Composed]:
        return [create_band_index(self.name, number) for number in range(self.banding.bands)]

    @property
    def summary(self) -> str:
        return (
            f"threshold {self.threshold:g}, {self.permutations} permutations, "
            f"{self.banding.bands} bands of {self.banding.rows} rows"
        )


def create(
    conn: Connection,
    name: str,
    *,
    mode: str = "simhash",
    max_distance: int = DEFAULT_MAX_DISTANCE,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    blocks: int | None = None,
    features: Features = DEFAULT_FEATURES,
    workload: str = "both",
    threshold: float = DEFAULT_THRESHOLD,
    permutations: int = DEFAULT_PERMUTATIONS,
) -> Index:
    """Create an index of either mode: its catalog rows, table, B-trees and functions.

    simhash: without `blocks`, the planner picks b for `expected_rows`, `max_distance` and
    `workload`. jaccard: the bands are chosen for `threshold` and `permutations`.
    """
    check_name(name)
    if mode == "simhash":
        return save(conn, SimhashIndex.planned(name, features, expected_rows, max_distance, blocks, workload))
    if mode == "jaccard":
        return save(conn, JaccardIndex.banded(name, features, expected_rows, threshold, permutations))
    raise InvalidParameter(f"unknown mode {mode!r}", f"use one of {', '.join(MODES)}")


AnyIndex = TypeVar("AnyIndex", bound=Index)


def save(conn: Connection, made: AnyIndex) -> AnyIndex:
    """Store a new index in one transaction: catalog rows, table, B-trees and functions."""
    name = check_name(made.name)
    try:
        with conn.transaction():
            if table_exists(conn, name):
                raise IndexExists(
                    f"index {name!r} already exists",
                    f"pick another name, or drop it first with `simdb drop {name}`",
                )
            values: dict[str, object] = {
                "name": name,
                "mode": made.mode,
                "bits": BITS,
                "features": str(made.features),
                "spec_version": made.spec_version,
                "expected_rows": made.expected_rows,
                **made.catalog(conn),
            }
            conn.execute(
                sql.SQL("INSERT INTO simdb._indexes ({}) VALUES ({})").format(
                    sql.SQL(", ").join(map(sql.Identifier, values)),
                    sql.SQL(", ").join(sql.Placeholder() * len(values)),
                ),
                list(values.values()),
            )
            made.create_objects(conn, str(values["near_sql"]))
            comment = f"simdb {made.mode} index {name}: {made.summary}, {made.features}"
            conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(made.table, sql.Literal(comment)))
    except psycopg.errors.UniqueViolation as error:
        raise IndexExists(f"index {name!r} already exists", "pick another name") from error
    return made


def table_exists(conn: Connection, table: str) -> bool:
    """Whether simdb.<table> exists."""
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (SCHEMA, table)
    ).fetchone()
    return found is not None


_MISMATCH_HINT = "use the simdb version that built it, or create a new index and re-ingest"


def get(conn: Connection, name: str) -> Index:
    """Load an index's parameters; refuse one made under settings this simdb cannot reproduce."""
    check_name(name)
    row = conn.execute(
        "SELECT mode, bits, features, spec_version, expected_rows, max_distance, blocks,"
        " threshold, permutations, bands, band_rows FROM simdb._indexes WHERE name = %s",
        (name,),
    ).fetchone()
    if row is None:
        raise IndexNotFound(
            f"no index named {name!r}",
            f"create it with `simdb create {name}`; `simdb list` shows the indexes",
        )
    mode, bits, features, spec_version, expected_rows, max_distance, blocks = row[:7]
    threshold, permutations, bands, band_rows = row[7:]
    wanted = SPEC_VERSION if mode == "simhash" else MINHASH_SPEC_VERSION
    if bits != BITS or spec_version != wanted:
        raise IndexMismatch(
            f"{mode} index {name!r} holds {bits}-bit values of spec v{spec_version}; "
            f"this simdb makes {BITS}-bit values of spec v{wanted}",
            _MISMATCH_HINT,
        )
    if mode == "jaccard":
        banding = Banding(bands, band_rows)
        return JaccardIndex(name, Features.parse(features), expected_rows, threshold, permutations, banding)
    plan = BlockPlan(max_distance, blocks)
    stored = conn.execute(
        "SELECT block_order FROM simdb._tables WHERE index_name = %s ORDER BY table_no", (name,)
    ).fetchall()
    if [list(order) for (order,) in stored] != plan.orders:
        raise IndexMismatch(f"index {name!r} has a table layout this simdb does not compute", _MISMATCH_HINT)
    return SimhashIndex(name, Features.parse(features), expected_rows, plan)


def get_or_create(conn: Connection, name: str) -> Index:
    """The index NAME, created with default settings if it does not exist yet."""
    try:
        return get(conn, name)
    except IndexNotFound:
        try:
            return create(conn, name)
        except IndexExists:  # created by a concurrent process in the meantime
            return get(conn, name)


@dataclass(frozen=True)
class Summary:
    """One line of `simdb list`."""

    name: str
    mode: str
    rows: int
    features: str
    parameters: dict[str, object]
    description: str

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "mode": self.mode,
            "rows": self.rows,
            "features": self.features,
            **self.parameters,
        }


def list_indexes(conn: Connection) -> list[Summary]:
    names = [str(name) for (name,) in conn.execute("SELECT name FROM simdb._indexes ORDER BY name")]
    result = []
    for name in names:
        index = get(conn, name)
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(index.table)).fetchone()
        rows = count[0] if count else 0
        result.append(Summary(name, index.mode, rows, str(index.features), index.parameters(), index.summary))
    return result


def drop(conn: Connection, name: str) -> None:
    """Remove an index: its table, B-trees and catalog rows, in one transaction."""
    index = get(conn, name)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE {}").format(index.table))
        conn.execute(sql.SQL("DROP FUNCTION {}").format(index.near_function))
        conn.execute(sql.SQL("DROP FUNCTION {}").format(index.pairs_function))
        clusters = sql.Identifier(SCHEMA, clusters_table(name))
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(clusters))
        conn.execute("DELETE FROM simdb._indexes WHERE name = %s", (name,))


def grant(conn: Connection, name: str, role: str, *, writer: bool = False) -> None:
    """Let `role` query index NAME (reader), or also write its rows (writer); nothing more.

    A reader gets USAGE on the schema and SELECT on the index, its clusters and the catalog;
    simdb's functions are executable by everyone, as PostgreSQL grants by default. A writer
    also gets INSERT, UPDATE and DELETE on the index's rows.
    """
    index = get(conn, name)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists is None:
        raise InvalidParameter(f"no role named {role!r}", f"create it first, e.g. CREATE ROLE {role} LOGIN")
    who = sql.Identifier(role)
    readable = [
        index.table,
        *[sql.Identifier(SCHEMA, t) for t in ("_indexes", "_tables", "_alembic_version")],
    ]
    if table_exists(conn, clusters_table(name)):
        readable.append(sql.Identifier(SCHEMA, clusters_table(name)))
    with conn.transaction():
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), who))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.SQL(", ").join(readable), who))
        if writer:
            conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(index.table, who))
