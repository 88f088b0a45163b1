"""The application's own table: an index whose rows are the table's rows, pgvector-style.

The application keeps each row's fingerprint (or signature) in a column of its own table T; simdb
puts the mode's B-trees on expressions of that column (named simdb_NAME_<column>, in T's schema)
and makes simdb."NAME" a view of T with the columns every index has (key as text, the sketch
under the mode's column name), so that every query face reads it as it reads simdb's own table.
PostgreSQL inlines the view, so a probe of the view's sketch is a probe of T's B-trees, and what
the application writes is searchable in its own transaction.

With a text column C, simdb also keeps the sketch current: a trigger clears it when C changes
(unless the same write sets it: the application's own value wins), a partial B-tree finds the
rows whose sketch is missing, and `simdb sync` fills them (simdb.follow.column).

On a Citus distributed table the clearing trigger runs on each shard (it touches only the row it
fires for, which is what citus.enable_unsafe_triggers asks of a trigger there); the waking one is
left out: a NOTIFY on a worker never reaches a listener on the coordinator, and it would make
every write to several shards fail (a transaction that notified cannot be prepared), so `sync
--watch` fills every interval instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter
from simdb.index import names, placement
from simdb.index.storage.base import Storage, TextSource, btree_statements

if TYPE_CHECKING:
    from simdb.index.placement import CitusTable, Placement
    from simdb.index.scheme import IndexSQL


# the clearing function's column, by its number (the trigger's argument)
NUMBERED_COLUMN = (
    "(SELECT a.attname FROM pg_catalog.pg_attribute AS a WHERE a.attrelid = TG_RELID"
    " AND a.attnum = TG_ARGV[0]::int2)"
)
# Citus creates and drops a trigger on a distributed table only with this (in the transaction)
UNSAFE_TRIGGERS = sql.Composed([sql.SQL("SET LOCAL citus.enable_unsafe_triggers = on")])


@dataclass(frozen=True)
class InTable(Storage):
    """Rows in the application's table schema.table: key column, sketch column, maybe text."""

    schema: str
    table: str
    key_column: str
    sketch_column: str
    text_column: str | None = None
    condition: str | None = None

    kind: ClassVar[str] = "column"
    writes_own_rows: ClassVar[bool] = False

    @property
    def relation(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.table)

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.table}"

    def _column(self, name: str | None) -> sql.Composable:
        return sql.SQL("t.{}").format(sql.Identifier(name)) if name else sql.SQL("NULL")

    def text_source(self) -> TextSource | None:
        if not self.text_column:
            return None
        return TextSource(self.schema, self.table, self.key_column, self.text_column)

    def create(self, conn: Connection, index: IndexSQL, comment: str) -> None:
        """The view simdb."NAME" of the rows that have a sketch (and meet the --where condition);
        its ctid is the table's, so rows are read by address as in simdb's own table. The B-trees
        come after (`btrees`): they may be built CONCURRENTLY, outside this transaction."""
        has_sketch = sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(self.sketch_column))
        where = has_sketch
        if self.condition:
            where = sql.SQL("{} AND ({})").format(has_sketch, sql.SQL(self.condition))
        size = sql.SQL("octet_length({})::bigint").format(self._column(self.text_column))
        conn.execute(
            sql.SQL(
                "CREATE VIEW {view} AS SELECT t.ctid AS ctid, t.{key}::text AS key,"
                " t.{sketch} AS {as_sketch}, {size} AS size, NULL::bytea AS content_hash,"
                " NULL::text AS extension, NULL::bigint AS mtime_ns, NULL::timestamptz AS added_at,"
                " NULL::timestamptz AS seen_at FROM {table} AS t WHERE {where}"
            ).format(
                view=index.table,
                key=sql.Identifier(self.key_column),
                sketch=sql.Identifier(self.sketch_column),
                as_sketch=sql.Identifier(index.sketch_column),
                size=size if self.text_column else sql.SQL("NULL::bigint"),
                table=self.relation,
                where=where,
            )
        )
        conn.execute(sql.SQL("COMMENT ON VIEW {} IS {}").format(index.table, sql.Literal(comment)))
        if self.text_column:
            self._create_triggers(conn, index)

    def sketch_btrees(self, index: IndexSQL, *, concurrently: bool) -> list[sql.Composed]:
        """The mode's B-trees on the sketch column."""
        return btree_statements(
            index,
            self.relation,
            sql.Identifier(self.sketch_column),
            names.app_btree_name(index.name, "{column}"),
            concurrently=concurrently,
        )

    def sketch_btree_names(self, index: IndexSQL) -> list[str]:
        return [names.app_btree_name(index.name, column) for column in index.columns]

    def lookup_btrees(self, index: IndexSQL, key_type: str, *, concurrently: bool) -> list[sql.Composed]:
        """One B-tree on the key as text where the key is not text already (lookups by key, as
        simdb.near_key makes them, would scan the table); and with a text column, the partial
        B-tree of the rows whose sketch is missing (what a sync reads)."""
        statements: list[sql.Composed] = []
        create = sql.SQL("CREATE INDEX CONCURRENTLY" if concurrently else "CREATE INDEX")
        key = sql.Identifier(self.key_column)
        if key_type != "text" and not key_type.startswith("character varying"):
            statements.append(
                sql.SQL("{} {} ON {} (({}::text))").format(
                    create, sql.Identifier(names.app_btree_name(index.name, "key")), self.relation, key
                )
            )
        if self.text_column:
            statements.append(
                sql.SQL("{} {} ON {} ({}) WHERE {} IS NULL AND {} IS NOT NULL").format(
                    create,
                    sql.Identifier(names.app_btree_name(index.name, "unfilled")),
                    self.relation,
                    key,
                    sql.Identifier(self.sketch_column),
                    sql.Identifier(self.text_column),
                )
            )
        return statements

    def _create_triggers(self, conn: Connection, index: IndexSQL) -> None:
        """The clearing triggers (install_clearing); and AFTER INSERT or UPDATE OF the text, once
        per statement: wake `sync --watch` (NOTIFY, delivered at commit). A sync's own writes set
        only the sketch, so they fire none of them."""
        self.install_clearing(conn, index)
        if index.placement.distributed:
            return
        wake = names.wake_function(index.name)
        conn.execute(
            sql.SQL(
                "CREATE FUNCTION {wake}() RETURNS trigger LANGUAGE plpgsql AS $$"
                " BEGIN NOTIFY {channel}; RETURN NULL; END $$"
            ).format(wake=wake, channel=names.channel(index.name))
        )
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER {name} AFTER INSERT OR UPDATE OF {text} ON {table}"
                " FOR EACH STATEMENT EXECUTE FUNCTION {wake}()"
            ).format(
                name=sql.Identifier(names.app_trigger_name(index.name, "wake")),
                text=sql.Identifier(self.text_column or ""),
                table=self.relation,
                wake=wake,
            )
        )

    def install_clearing(self, conn: Connection, index: IndexSQL, *, again: bool = False) -> None:
        """BEFORE UPDATE OF the text, for each row whose text changed and whose sketch the same
        write left as it was: clear the sketch (the next sync refills it), unless the write named
        the sketch column (an ORM saving every column after an edit that left the sketch as it
        was): a trigger BEFORE UPDATE OF the sketch, on the same rows, marks that first (in a
        transaction setting the clearing trigger reads and resets; triggers fire in the order of
        their names, and simdb_NAME_claim comes before simdb_NAME_clear). `again`: the functions
        are replaced and the marking trigger made anew, on an index made without it.

        The clearing function finds the sketch column by its number (the trigger's argument), as
        the trigger's WHEN clause does, so that a renamed column never fails the application's
        writes (a sync then says the column is gone)."""
        text, sketch = sql.Identifier(self.text_column or ""), sql.Identifier(self.sketch_column)
        clear, claim = names.clear_function(index.name), names.claim_function(index.name)
        flag = sql.Literal(names.claim_setting(index.name))
        distributed = index.placement.distributed
        # A shard's columns may be numbered apart from its table's (columns dropped before it was
        # distributed): there the function is given the column's name (a renamed column is then
        # left as it is, and a sync says it is gone).
        column = sql.SQL("TG_ARGV[0]" if distributed else NUMBERED_COLUMN)
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {clear}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " IF current_setting({flag}, true) = 'on' THEN PERFORM set_config({flag}, '', true);"
                " RETURN NEW; END IF;"
                " NEW := jsonb_populate_record(NEW, jsonb_build_object({column}, NULL)); RETURN NEW; END $$"
            ).format(clear=clear, flag=flag, column=column)
        )
        conn.execute(
            sql.SQL(
                "CREATE OR REPLACE FUNCTION {claim}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                " PERFORM set_config({flag}, 'on', true); RETURN NEW; END $$"
            ).format(claim=claim, flag=flag)
        )
        number = conn.execute(
            "SELECT attnum FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass AND attname = %s",
            (self.relation.as_string(conn), self.sketch_column),
        ).fetchone()
        argument = self.sketch_column if distributed else str(number[0] if number else 0)
        if distributed:
            conn.execute(UNSAFE_TRIGGERS)
        claimed = sql.Identifier(names.app_trigger_name(index.name, "claim"))
        if again:
            conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(claimed, self.relation))
        changed = sql.SQL(
            "NEW.{text} IS DISTINCT FROM OLD.{text} AND NEW.{sketch} IS NOT DISTINCT FROM OLD.{sketch}"
        ).format(text=text, sketch=sketch)
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER {name} BEFORE UPDATE OF {sketch} ON {table} FOR EACH ROW"
                " WHEN ({changed}) EXECUTE FUNCTION {claim}()"
            ).format(name=claimed, sketch=sketch, table=self.relation, changed=changed, claim=claim)
        )
        if again:
            return
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER {name} BEFORE UPDATE OF {text} ON {table} FOR EACH ROW"
                " WHEN ({changed}) EXECUTE FUNCTION {clear}({number})"
            ).format(
                name=sql.Identifier(names.app_trigger_name(index.name, "clear")),
                text=text,
                table=self.relation,
                changed=changed,
                clear=clear,
                number=sql.Literal(argument),
            )
        )

    def renew(self, conn: Connection, index: IndexSQL) -> None:
        """The clearing triggers of an index made before a write that names the sketch column kept
        it (install_clearing)."""
        if self.text_column:
            self.install_clearing(conn, index, again=True)

    def btree_names(self, index: IndexSQL) -> list[str]:
        """The names every B-tree simdb may put on the table has (in the table's schema)."""
        return [names.app_btree_name(index.name, column) for column in [*index.columns, "key", "unfilled"]]

    def drop_statements(self, index: IndexSQL) -> list[sql.Composed]:
        """The view, and simdb's B-trees and triggers on the table (triggers only where a text
        column made them: Citus refuses even DROP TRIGGER IF EXISTS on a distributed table), by
        their names, so nothing of the application's is touched (names.owned_objects drops the
        trigger functions after)."""
        triggers = ("claim", "clear", "wake") if self.text_column else ()
        unsafe = [UNSAFE_TRIGGERS] if triggers and index.placement.distributed else []
        return [
            *unsafe,
            sql.SQL("DROP VIEW IF EXISTS {}").format(index.table),
            *(
                sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(self.schema, btree))
                for btree in self.btree_names(index)
            ),
            *(
                sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                    sql.Identifier(names.app_trigger_name(index.name, what)), self.relation
                )
                for what in triggers
            ),
        ]

    def heap(self, index: IndexSQL) -> sql.Identifier:
        return self.relation

    def colocation(self, index: IndexSQL) -> sql.Identifier | None:
        """None: the table is distributed by its own key column, not by the text of it."""
        return None

    def placed_relation(self, name: str) -> str:
        """The application's table's: Local, or distributed by its own column on Citus."""
        return self.relation.as_string()

    def placement_of(self, found: CitusTable | None, name: str) -> Placement:
        return placement.application_placement(found, self.placed_relation(name))

    def refuse_writes(self, index: IndexSQL, what: str) -> None:
        raise InvalidParameter(
            f"{what} does not write index {index.name!r}: its rows are the rows of {self.label}",
            f"write that table: a row is in the index while its {self.sketch_column} is set (and leaves"
            f" it when the row is deleted or its {self.sketch_column} set to NULL)",
        )

    def describe(self) -> str:
        return f"in {self.label}.{self.sketch_column}"

    def as_dict(self) -> dict[str, object]:
        return {
            "storage": self.kind,
            "table": self.label,
            "key_column": self.key_column,
            "sketch_column": self.sketch_column,
            "text_column": self.text_column,
        }
