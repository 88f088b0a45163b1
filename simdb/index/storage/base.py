"""The storage interface, and simdb's own table (the default kind)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from simdb.db.connection import Connection
from simdb.index import names, placement

if TYPE_CHECKING:
    from simdb.index.placement import CitusTable, Placement
    from simdb.index.scheme import IndexSQL


def btree_statements(
    index: IndexSQL,
    table: sql.Composable,
    sketch: sql.Composable,
    name_of: str,
    *,
    if_missing: bool = False,
    concurrently: bool = False,
) -> list[sql.Composed]:
    """CREATE INDEX on each of the mode's B-tree expressions of `sketch` (a column of `table`),
    named name_of.format(column=...) in `table`'s schema."""
    words = ["CREATE INDEX", "CONCURRENTLY" if concurrently else "", "IF NOT EXISTS" if if_missing else ""]
    create = sql.SQL(" ".join(word for word in words if word))
    return [
        sql.SQL("{create} {name} ON {table} ({columns})").format(
            create=create, name=sql.Identifier(name_of.format(column=column)), table=table, columns=columns
        )
        for column, columns in zip(index.columns, index.btree_columns(sketch), strict=True)
    ]


@dataclass(frozen=True)
class TextSource:
    """An application's column of texts, by key: schema.table.text_column, keyed by key_column."""

    schema: str
    table: str
    key_column: str
    text_column: str

    def statement(self) -> sql.Composed:
        """The text of the row whose key (as text, as the index has it) is the one parameter."""
        return sql.SQL("SELECT t.{text}::text FROM {table} AS t WHERE t.{key}::text = %s LIMIT 1").format(
            text=sql.Identifier(self.text_column),
            table=sql.Identifier(self.schema, self.table),
            key=sql.Identifier(self.key_column),
        )

    def describe(self) -> str:
        return f"{self.schema}.{self.table}.{self.text_column}"


class Storage(ABC):
    """Where an index's rows live: what makes and removes them, and who may write them."""

    kind: ClassVar[str]
    writes_own_rows: ClassVar[bool] = True  # False: the rows are the application's (a writer role
    # gets no INSERT, UPDATE or DELETE on simdb."NAME", a view that would pass them to its table)

    @abstractmethod
    def create(self, conn: Connection, index: IndexSQL, comment: str) -> None:
        """simdb."NAME" (a table, or a view of the application's table) and the B-trees that search
        it, in the caller's transaction (after the index's catalog rows)."""

    def drop_statements(self, index: IndexSQL) -> list[sql.Composed]:
        """What to remove besides what names.owned_objects names (the application's objects are
        never among them: only simdb's B-trees and triggers on its table)."""
        return []

    def placement(self, conn: Connection, name: str) -> Placement:
        """Where the rows are: simdb."NAME"'s placement in Citus' metadata (Local without Citus)."""
        return self.placement_of(placement.citus_table(conn, self.placed_relation(name), name), name)

    def placed_relation(self, name: str) -> str:
        """The table (a regclass's text) whose placement is the index's."""
        return placement.own_relation(name)

    def placement_of(self, found: CitusTable | None, name: str) -> Placement:
        """`placement` from what Citus' metadata says of placed_relation."""
        return placement.own_placement(found, name)

    def colocation(self, index: IndexSQL) -> sql.Identifier | None:
        """The distributed table that a table joined with the rows on key goes beside (the clusters
        table), or None where none can: it is then distributed on its own."""
        return index.table

    def heap(self, index: IndexSQL) -> sql.Identifier:
        """The table that holds the rows (what VACUUM and row addresses are about)."""
        return index.table

    def refuse_writes(self, index: IndexSQL, what: str) -> None:  # noqa: B027 (most kinds take writes)
        """Raise if simdb must not write this index's rows itself (`what`: the command)."""

    def renew(self, conn: Connection, index: IndexSQL) -> None:  # noqa: B027 (most kinds have nothing there)
        """Remake, as this simdb makes them, the objects an older one made outside simdb's schemas
        (triggers on the application's table); in the caller's transaction (a migration's)."""

    def describe(self) -> str:
        """A few words for `simdb list`: where the rows are ('' for simdb's own table)."""
        return ""

    def text_source(self) -> TextSource | None:
        """The application's column holding each row's text, where the rows have one there."""
        return None

    def as_dict(self) -> dict[str, object]:
        return {"storage": self.kind}


@dataclass(frozen=True)
class OwnTable(Storage):
    """simdb."NAME": key, sketch, and what ingest knows of each row (size, content hash, ...)."""

    kind: ClassVar[str] = "own"

    def create(self, conn: Connection, index: IndexSQL, comment: str) -> None:
        """The table, keyed by key (a distributed table can be split on it), and one B-tree per
        expression of the sketch: any application can insert (key, sketch) in plain SQL and be
        found as simdb would find it."""
        conn.execute(
            sql.SQL(
                "CREATE TABLE {table} ("
                " key text NOT NULL, {sketch}, size bigint, content_hash bytea, extension text,"
                " mtime_ns bigint, added_at timestamptz NOT NULL DEFAULT now(),"
                " seen_at timestamptz NOT NULL DEFAULT now(),"
                " CONSTRAINT {pkey} PRIMARY KEY (key))"
            ).format(
                table=index.table,
                sketch=index.sketch_definition(),
                pkey=sql.Identifier(names.primary_key_name(index.name)),
            )
        )
        for statement in index.btrees():
            conn.execute(statement)
        index.placement.place_index(conn, index)
        conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(index.table, sql.Literal(comment)))


OWN = OwnTable()
