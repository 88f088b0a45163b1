"""What every mode of index provides: its parameters as one Spec value, and an Index that knows
its sketch, its catalog columns, its table and its SQL statements.

The rest of simdb (ingest, query, batch, attach, the CLI) talks to these two interfaces only and
never asks which mode it has; a new mode or fingerprint width is one new module in this package.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np
from psycopg import sql
from psycopg.abc import AdaptContext

from simdb.db.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter
from simdb.index import catalog, names, rowscan
from simdb.index.ddl import table_function
from simdb.index.placement import LOCAL, Placement
from simdb.index.storage.base import OWN, Storage, btree_statements
from simdb.sketch.bits import BITS
from simdb.sketch.features import Content, Features
from simdb.sketch.minhash import UInt64Array

Sketch = int | UInt64Array  # an unsigned SimHash fingerprint, or a MinHash signature
SqlSketch = int | list[int]  # the same as stored: signed bigint, or bigint[]

MISMATCH_HINT = "use the simdb version that built it, or create a new index and re-ingest"

SKETCH, CUTOFF = sql.SQL("$1"), sql.SQL("$2")  # the parameters of NAME__near's statement
NO_CHECK = sql.SQL("true")  # the sketch check where a sketch's type admits only the right shape


def _comma(text: str) -> str:
    return f", {text}" if text else ""


class Spec(ABC):
    """A mode's parameters as one value (frozen dataclass fields = the options of `simdb create`)."""

    mode: ClassVar[str]

    @classmethod
    def newest(cls, **given: Any) -> Spec:
        """The spec `simdb create` gives a new index: the parameters given, the rest the mode's
        recommended defaults, which may be newer than the dataclass's (those stay, so that code
        and migrations written before keep their meaning)."""
        return cls(**given)

    @abstractmethod
    def build(self, name: str, features: Features, expected_rows: int) -> Index:
        """A new index's parameters, derived for its expected rows (not stored yet: index.save)."""

    @abstractmethod
    def sketch(self, content: Content, features: Features) -> Sketch:
        """A document's fingerprint or signature; raises EmptyDocument if it has no shingles."""

    @abstractmethod
    def sketches(self, contents: list[Content], features: Features) -> list[Sketch | None]:
        """Sketches of many documents (None for an empty one), in one call of the kernels where
        the features allow: the unit of work of a sketching thread."""

    def for_column(self) -> Spec:
        """This spec for an application's column that the application fills itself (a mode whose
        newest sketches suit only simdb's own tables says which to use there)."""
        return self

    def in_application_table(self) -> Spec:
        """This spec for an index in an application's own table, whose B-trees its migrations make
        on the key expressions alone (Django's, Alembic's): a mode that may have others plans
        without them, and refuses them if asked for."""
        return self

    @abstractmethod
    def literal(self, value: Sketch) -> str:
        """A sketch as `simdb fingerprint` prints it: what SQL users paste into a query."""


@dataclass(frozen=True)
class Index(ABC):
    """An index's parameters as stored in the catalog; each mode adds its own fields."""

    name: str
    features: Features
    expected_rows: int
    placement: Placement = field(default=LOCAL, kw_only=True)  # not a catalog column: Citus' metadata
    storage: Storage = field(default=OWN, kw_only=True)  # where the rows live (catalog: _sources)
    # The B-trees in simdb's table are on (key expression, sketch), so that a search reads its
    # candidates from them alone (catalog: _indexes.covering; made so since revision 0020).
    covering: bool = field(default=False, kw_only=True)

    mode: ClassVar[str]
    widths: ClassVar[tuple[int, ...]] = (BITS,)  # the widths of a fingerprint or signature value it makes
    spec_versions: ClassVar[tuple[int, ...]]  # the fingerprint or signature specs this simdb computes
    sketch_column: ClassVar[str]  # the column holding each row's fingerprint or signature
    score_column: ClassVar[str]  # what the near and pairs functions rank by
    score_type: ClassVar[str]
    cutoff_column: ClassVar[str]  # a search's bound, as functions and the clusters table name it
    cutoff_type: ClassVar[str]

    # --- parameters -------------------------------------------------------------------------

    @property
    def bits(self) -> int:
        """The width of a fingerprint, or of each signature value."""
        return BITS

    @property
    @abstractmethod
    def sketch_size(self) -> int:
        """Bits of a fingerprint or values of a signature: with the mode, the shape of a sketch."""

    @property
    @abstractmethod
    def sketch_type(self) -> str:
        """The sketch's PostgreSQL type, as binary COPY and function arguments name it."""

    @property
    def column_type(self) -> str:
        """The sketch column's type, as format_type names it (an application's column must be it)."""
        return self.sketch_type

    @property
    @abstractmethod
    def spec(self) -> Spec:
        """The mode's parameters of this index as one value."""

    @property
    @abstractmethod
    def spec_version(self) -> int:
        """The version of the fingerprint or signature spec this index's sketches are made under."""

    @property
    @abstractmethod
    def summary(self) -> str:
        """The parameters of this mode in a few words."""

    @property
    @abstractmethod
    def finds(self) -> str:
        """What the index finds, in words ("finds 9 in 10 copies at Jaccard >= 0.90 ...")."""

    @abstractmethod
    def parameters(self) -> dict[str, object]:
        """The parameters of this mode, for JSON."""

    def nearest_scan(self) -> sql.Composed | None:
        """A scan for the row nearest a sketch whatever its score (two parameters: the sketch and
        a key to leave out), where the mode's score estimates a Jaccard similarity (jaccard_at);
        None where it has no such scan."""
        return None

    def jaccard_at(self, score: Any) -> float:
        """The Jaccard similarity a score of nearest_scan estimates."""
        raise NotImplementedError(f"a {self.mode} index has no nearest scan")

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "mode": self.mode,
            **self.parameters(),
            "features": str(self.features),
            "spec_version": self.spec_version,
            "finds": self.finds,
            **self.placement.as_dict(),
            **self.storage.as_dict(),
        }

    @property
    def whereabouts(self) -> str:
        """Where the rows are, in a few words ('' for simdb's own table on one server)."""
        return ", ".join(part for part in (self.placement.describe(), self.storage.describe()) if part)

    def lines(self) -> list[str]:
        return [
            f"{self.mode} index {self.name}: {self.summary}, features {self.features}, "
            f"spec v{self.spec_version}{_comma(self.whereabouts)}; it {self.finds}; "
            f'SQL: {names.SCHEMA}."{self.name}"'
        ]

    @abstractmethod
    def catalog_values(self, conn: Connection) -> dict[str, object]:
        """The catalog columns of this mode (simdb._indexes), with the index's near statement."""

    @classmethod
    def from_catalog(cls, conn: Connection, row: Mapping[str, Any]) -> Self:
        """The index a catalog row describes; IndexMismatch if this simdb cannot reproduce it."""
        return cls.from_row(row, catalog.block_orders(conn, row["name"]))

    @classmethod
    @abstractmethod
    def from_row(cls, row: Mapping[str, Any], block_orders: list[list[int]]) -> Self:
        """from_catalog, given the catalog's row and the block orders of the index's tables."""

    @classmethod
    def check_stored(cls, row: Mapping[str, Any]) -> None:
        """Refuse a catalog row made under a width or spec version this simdb does not make."""
        if row["bits"] not in cls.widths or row["spec_version"] not in cls.spec_versions:
            known = "/".join(f"v{version}" for version in cls.spec_versions)
            widths = "/".join(map(str, cls.widths))
            raise IndexMismatch(
                f"{cls.mode} index {row['name']!r} holds {row['bits']}-bit values of spec "
                f"v{row['spec_version']}; this simdb makes {widths}-bit values of spec {known}",
                MISMATCH_HINT,
            )

    def upgraded(self) -> Self | None:
        """This index under the newest spec of its mode, or None if it has it already; an
        InvalidParameter if the mode cannot move it in place."""
        return None

    # --- sketches ---------------------------------------------------------------------------

    def sketch(self, content: Content) -> Sketch:
        """A document's fingerprint or signature; raises EmptyDocument if it has no shingles."""
        return self.spec.sketch(content, self.features)

    def sketches(self, contents: list[Content]) -> list[Sketch | None]:
        """Sketches of many documents (None for an empty one): the unit of work of a sketching thread."""
        return self.spec.sketches(contents, self.features)

    @abstractmethod
    def to_sql(self, value: Sketch) -> SqlSketch:
        """A sketch as PostgreSQL stores it (signed bigint bits)."""

    def copy_sketches(self, cursor: AdaptContext) -> Callable[[Sketch], object]:
        """How binary COPY on `cursor` writes this index's sketches: the value to write for each
        (to_sql's, unless the mode registers a faster dumper of its type on the cursor alone)."""
        return self.to_sql

    @abstractmethod
    def from_sql(self, value: Any) -> Sketch:
        """A stored sketch back in Python's unsigned form."""

    @abstractmethod
    def random_sketches(self, rng: np.random.Generator, count: int) -> list[Sketch]:
        """`count` random sketches of this index's shape (padding rows for benchmarks)."""

    def parse_sketch(self, text: str) -> Sketch:
        """A sketch given as text on the command line (--fingerprint); only simhash has one."""
        raise self.refuse("--fingerprint", "query it with --text, --file or --key")

    @abstractmethod
    def parse_given(self, value: object) -> Sketch:
        """A sketch computed elsewhere, as a JSONL/CSV field holds it (`ingest --fingerprint-field`);
        InvalidParameter if it is not one of this index's shape."""

    def describe_sketch(self, value: Sketch) -> str:
        """' of <sketch>' for messages about a query's sketch, where it is short enough to print."""
        return ""

    # --- searching --------------------------------------------------------------------------

    @abstractmethod
    def cutoff(self, max_distance: int | None = None, min_similarity: float | None = None) -> int | float:
        """The checked bound of a search: a Hamming distance or a minimum similarity, by mode."""

    @abstractmethod
    def describe_cutoff(self, cutoff: float) -> str:
        """'within 3 bits' or 'at similarity >= 0.8', for messages."""

    @abstractmethod
    def scored(self, score: float) -> tuple[float | None, int | None]:
        """(similarity or None, distance or None) of a score from the near or pairs function."""

    @abstractmethod
    def compared(self, a: Sketch, b: Sketch) -> tuple[float | None, int | None]:
        """(similarity or None, distance or None) of two sketches of this index, as `scored`
        gives them for a pair its SQL finds (for rows further apart than the cutoff too)."""

    def refuse(self, what: str, instead: str) -> InvalidParameter:
        return InvalidParameter(f"{what} does not apply to {self.mode} index {self.name!r}", instead)

    # --- objects in the database ------------------------------------------------------------

    @property
    @abstractmethod
    def columns(self) -> list[str]:
        """One name per B-tree on the sketch (a permuted table or a band): p0, p1, ... or b0, b1, ..."""

    @abstractmethod
    def sketch_definition(self) -> sql.Composable:
        """The sketch column's definition in CREATE TABLE."""

    @abstractmethod
    def btree_keys(self, sketch: sql.Composable) -> list[sql.Composable]:
        """What each B-tree is on, in the order of `columns`, as an expression of a sketch: a
        permuted table's prefix of a fingerprint, or a band's key of a signature."""

    def btree_columns(self, sketch: sql.Composable) -> list[sql.Composable]:
        """Each B-tree's columns as CREATE INDEX lists them, in the order of `columns`: its key
        expression of `sketch`, and the sketch after it where the index is covering."""
        after = sql.SQL(", {}").format(sketch) if self.covering else sql.SQL("")
        return [sql.SQL("({}){}").format(key, after) for key in self.btree_keys(sketch)]

    def btrees(self, *, if_missing: bool = False) -> list[sql.Composed]:
        """CREATE INDEX NAME_<column> on each B-tree's expression of the stored sketch in simdb's
        own table (IF NOT EXISTS with `if_missing`). Nothing derived is stored in the row; where
        many rows share a key (short prefixes), PostgreSQL stores it once with the list of those
        rows (B-tree deduplication)."""
        name_of = names.btree_name(self.name, "{column}")
        stored = sql.Identifier(self.sketch_column)
        if not self.placement.btrees_in_table:
            return []
        return btree_statements(self, self.table, stored, name_of, if_missing=if_missing)

    def pairs_in_memory(
        self, conn: Connection, cutoff: float, jobs: int = 1, fresh: rowscan.Where | None = None
    ) -> tuple[sql.Composed, Iterator[list[Any]]] | None:
        """Every pair within the cutoff found in memory (simdb.plan.pairing), several times faster than
        the pairs function's self-joins: the statement that names them, SELECT key_a, key_b,
        score FROM ... rows a and b ... WHERE ..., and its parameters for each batch of pairs;
        None where the mode cannot.

        The pairs may be row addresses (Placement.read_rows), so the caller runs this and the
        statement in one REPEATABLE READ transaction. Conditions on rows a and b may be added
        with AND. `fresh` (a condition on row r) says that only pairs with a row where it holds
        are wanted: a mode may pair just those; the caller's conditions keep no others.
        """
        return None

    def near_statement(
        self, sketch: sql.Composable = SKETCH, cutoff: sql.Composable = CUTOFF
    ) -> sql.Composed:
        """The statement of NAME__near: SELECT key, score of the rows within `cutoff` of `sketch`
        (SQL expressions: the function's $1 and $2, or simdb.near's own parameters), nearest
        first, as the index's placement runs it (placement.Placement.near_statement)."""
        return self.placement.near_statement(self, sketch, cutoff)

    @abstractmethod
    def table_near_statement(
        self, sketch: sql.Composable = SKETCH, cutoff: sql.Composable = CUTOFF
    ) -> sql.Composed:
        """near_statement over the rows of simdb."NAME" and the B-trees on its sketch column."""

    @abstractmethod
    def pairs_statement(self, rows: sql.Composable) -> sql.Composed:
        """SELECT key_a, key_b, score of every pair within cutoff $1 among the rows of the relation
        `rows` (simdb."NAME" on one server), through its B-tree expressions."""

    @abstractmethod
    def score(self, stored: sql.Composable, query: sql.Composable) -> sql.Composable:
        """What near and pairs rank by, of two sketches: a Hamming distance or an estimated Jaccard."""

    @abstractmethod
    def keeps(self, score: sql.Composable, cutoff: sql.Composable) -> sql.Composable:
        """The condition that a score is within a cutoff (at most a distance, at least a similarity)."""

    nearest_first: ClassVar[sql.SQL]  # ORDER BY of a near statement's (key, score) rows

    def register(self, conn: Connection) -> None:  # noqa: B027 (a hook: most modes need nothing)
        """Catalog rows beyond the index's own (after it, before its objects); none by default."""

    @property
    def table(self) -> sql.Identifier:
        """simdb."NAME", quoted for psycopg.sql."""
        return names.table(self.name)

    @property
    def near_function(self) -> sql.Identifier:
        return names.near_function(self.name)

    @property
    def pairs_function(self) -> sql.Identifier:
        return names.pairs_function(self.name)

    def create_objects(self, conn: Connection, near_sql: str, comment: str) -> None:
        """The index's rows where its storage keeps them, their B-trees, and its near and pairs
        functions (after its catalog row)."""
        self.storage.create(conn, self, comment)
        self.create_functions(conn, near_sql)

    def create_functions(self, conn: Connection, near_sql: str) -> None:
        """NAME__near and NAME__pairs, running the index's statements (`near_sql`: as the catalog has it)."""
        sketch, cutoff, score = self.sketch_column, self.cutoff_column, self.score_column
        conn.execute(
            table_function(
                self.near_function,
                f"{sketch} {self.sketch_type}, {cutoff} {self.cutoff_type}",
                f"key text, {score} {self.score_type}",
                self.placement.near_settings,
                near_sql,
                self._sketch_guard().as_string(conn),
            )
        )
        conn.execute(
            table_function(
                self.pairs_function,
                f"{cutoff} {self.cutoff_type}",
                f"key_a text, key_b text, {score} {self.score_type}",
                self.placement.pairs_settings,
                self.placement.pairs_statement(self).as_string(conn),
            )
        )

    def _sketch_guard(self) -> sql.Composable:
        """NAME__near's first statement: the sketch check on its own, so that a sketch of the wrong
        shape is refused before the statement runs, with a short CONTEXT (raised inside the
        statement, the error's CONTEXT would quote the whole statement, kilobytes of it for a
        jaccard index). Nothing where the sketch's type admits only the right shape."""
        check = self.sketch_check(SKETCH)
        return sql.SQL("") if check == NO_CHECK else sql.SQL("PERFORM {}; ").format(check)

    def sketch_check(self, sketch: sql.Composable) -> sql.Composable:
        """An SQL condition for the near statement: true for a query sketch of the index's shape,
        an error for any other (which would otherwise find nothing, or fail obscurely)."""
        return NO_CHECK

    def _refusal(self, wrong: sql.Composable, given: sql.Composable, wanted: str) -> sql.Composed:
        """The sketch_check raising 'simdb: index NAME takes <wanted>; this one is <given>' where
        `wrong` holds; it names only the query's sketch, so PostgreSQL checks it once per query."""
        return sql.SQL("CASE WHEN {wrong} THEN {refused}({name}, {wanted}, {given}) ELSE true END").format(
            wrong=wrong,
            refused=names.internal("_refused_sketch"),
            name=sql.Literal(self.name),
            wanted=sql.Literal(wanted),
            given=given,
        )
