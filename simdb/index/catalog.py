"""simdb's catalog: the only module that reads or writes simdb._indexes, _tables, _sources,
_pair_marks and _loads.

_indexes holds one row per index with every parameter it was built with (the columns of its
mode are filled, the others NULL); _tables the permuted tables of a simhash index; _sources the
user table an attached index reads; _pair_marks where each consumer of `pairs --new` read last;
_loads how far each `simdb load` under way got.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from psycopg import sql
from psycopg.rows import dict_row, tuple_row

from simdb.db.connection import Connection
from simdb.index.names import VERSION_TABLE, in_schema

T = TypeVar("T")
INDEXES = in_schema("_indexes")
TABLES = in_schema("_tables")
SOURCES = in_schema("_sources")
PAIR_MARKS = in_schema("_pair_marks")  # (since revision 0018)
LOADS = in_schema("_loads")  # (since revision 0019)


def add_index(conn: Connection, values: Mapping[str, object]) -> None:
    """Insert an index's row: {column: value} for the columns its mode fills."""
    conn.execute(
        sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            INDEXES,
            sql.SQL(", ").join(map(sql.Identifier, values)),
            sql.SQL(", ").join(sql.Placeholder() * len(values)),
        ),
        list(values.values()),
    )


@dataclass(frozen=True)
class Read:
    """One read of the catalog, as a statement and its parameters (rows as dicts or tuples), so
    that a sync and an async connection (simdb.aio) run the same reads: see `run`."""

    text: sql.SQL | sql.Composed
    params: tuple[Any, ...]
    dicts: bool = False


Reads = Generator[Read, list[Any], T]  # reads without I/O: send each Read's rows, get the result


def run(conn: Connection, reads: Reads[T]) -> T:
    """The result of `reads`, each Read run on `conn`."""
    try:
        read = next(reads)
        while True:
            with conn.cursor(row_factory=dict_row if read.dicts else tuple_row) as cursor:
                rows: list[Any] = cursor.execute(read.text, read.params).fetchall()
            read = reads.send(rows)
    except StopIteration as done:
        return cast(T, done.value)


def index_row_read(name: str) -> Read:
    """The read of an index's row, as {column: value} (no row: no such index)."""
    return Read(sql.SQL("SELECT * FROM {} WHERE name = %s").format(INDEXES), (name,), dicts=True)


def version_read(name: str) -> Read:
    """The read of an index's catalog version: the transaction ids (xmin) that last wrote its rows
    in _indexes, _tables and _sources, one row of text (no row: no such index). It changes with
    every committed write of them (a drop and re-create, a layout migration, distribute, a sync),
    and costs one lookup by key per table: what a cache of loaded indexes checks before each use."""
    return Read(
        sql.SQL(
            "SELECT format('%%s/%%s/%%s', i.xmin,"
            " (SELECT string_agg(t.xmin::text, ',' ORDER BY t.table_no)"
            "  FROM {} AS t WHERE t.index_name = i.name),"
            " (SELECT s.xmin::text FROM {} AS s WHERE s.index_name = i.name))"
            " FROM {} AS i WHERE i.name = %s"
        ).format(TABLES, SOURCES, INDEXES),
        (name,),
    )


def index_row(conn: Connection, name: str) -> dict[str, Any] | None:
    """An index's row as {column: value}, or None if there is no such index."""
    read = index_row_read(name)
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(read.text, read.params).fetchone()


def index_names(conn: Connection, mode: str | None = None) -> list[str]:
    """The names of all indexes (of one mode, if given), sorted."""
    if mode is None:  # (also before revision 0003, which added the mode column)
        rows = conn.execute(sql.SQL("SELECT name FROM {} ORDER BY name").format(INDEXES))
    else:
        rows = conn.execute(
            sql.SQL("SELECT name FROM {} WHERE mode = %s ORDER BY name").format(INDEXES), (mode,)
        )
    return [str(name) for (name,) in rows]


def simhash_limits(conn: Connection) -> list[tuple[str, int, int]]:
    """(name, bits, max distance) of every simhash index, sorted by name: what simdb.near dispatches."""
    rows = conn.execute(
        sql.SQL("SELECT name, bits, max_distance FROM {} WHERE mode = 'simhash' ORDER BY name").format(
            INDEXES
        )
    )
    return [(str(name), int(bits), int(k)) for name, bits, k in rows]


def remove_index(conn: Connection, name: str) -> None:
    """Delete an index's rows from the catalog (its _tables and _sources rows cascade)."""
    conn.execute(sql.SQL("DELETE FROM {} WHERE name = %s").format(INDEXES), (name,))


def near_sql(conn: Connection, name: str) -> str:
    """The static statement behind simdb_internal."NAME__near", as the index stored it."""
    row = conn.execute(sql.SQL("SELECT near_sql FROM {} WHERE name = %s").format(INDEXES), (name,)).fetchone()
    return str(row[0]) if row else ""


def set_near_sql(conn: Connection, name: str, statement: str) -> None:
    """Record the statement behind simdb_internal."NAME__near" after it changed (a layout migration)."""
    conn.execute(sql.SQL("UPDATE {} SET near_sql = %s WHERE name = %s").format(INDEXES), (statement, name))


@dataclass(frozen=True)
class PermutedTable:
    """One permuted table of a simhash index, as _tables records it."""

    number: int
    column: str
    block_order: Sequence[int]
    prefix_bits: int


def add_tables(conn: Connection, name: str, tables: Sequence[PermutedTable]) -> None:
    for table in tables:
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (index_name, table_no, column_name, block_order, prefix_bits)"
                " VALUES (%s, %s, %s, %s, %s)"
            ).format(TABLES),
            (name, table.number, table.column, list(table.block_order), table.prefix_bits),
        )


def block_orders(conn: Connection, name: str) -> list[list[int]]:
    """The block order of each permuted table of index NAME, by table number."""
    read = block_orders_read(name)
    return orders_of(conn.execute(read.text, read.params).fetchall())


def block_orders_read(name: str) -> Read:
    """The read of block_orders."""
    return Read(
        sql.SQL("SELECT block_order FROM {} WHERE index_name = %s ORDER BY table_no").format(TABLES), (name,)
    )


def orders_of(rows: Sequence[Sequence[Any]]) -> list[list[int]]:
    """block_orders from its read's rows."""
    return [list(order) for (order,) in rows]


@dataclass(frozen=True)
class SourceRow:
    """The user table an index reads, as _sources records it: an attached index's text column,
    or (an index in the application's own table) its sketch column, with or without text ('')."""

    schema: str
    table: str
    key_column: str
    text_column: str
    condition: str | None
    sketch_column: str | None = None  # since revision 0013


def add_source(conn: Connection, name: str, source: SourceRow) -> None:
    columns = ["source_schema", "source_table", "key_column", "text_column", "condition"]
    values: list[object] = [source.schema, source.table, source.key_column, source.text_column or None]
    values.append(source.condition)
    if source.sketch_column:
        columns.append("sketch_column")
        values.append(source.sketch_column)
    conn.execute(
        sql.SQL("INSERT INTO {} (index_name, {}) VALUES (%s, {})").format(
            SOURCES,
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() * len(columns)),
        ),
        [name, *values],
    )


def source_row(conn: Connection, name: str) -> SourceRow | None:
    """The record of the table index NAME reads, or None (read as JSON: revisions before 0013,
    which migrations still meet, have no sketch_column)."""
    read = source_row_read(name)
    return source_of(conn.execute(read.text, read.params).fetchall())


def source_row_read(name: str) -> Read:
    """The read of source_row."""
    return Read(sql.SQL("SELECT to_jsonb(s) FROM {} AS s WHERE index_name = %s").format(SOURCES), (name,))


def source_of(rows: Sequence[Sequence[Any]]) -> SourceRow | None:
    """source_row from its read's rows."""
    if not rows:
        return None
    found = rows[0][0]
    return SourceRow(
        found["source_schema"],
        found["source_table"],
        found["key_column"],
        found["text_column"] or "",
        found["condition"],
        found.get("sketch_column"),
    )


def capture(conn: Connection, name: str) -> str:
    """How attached index NAME learns of changes: 'triggers' (a queue its triggers fill) or
    'none' (a sync compares snapshots)."""
    row = conn.execute(
        sql.SQL("SELECT capture FROM {} WHERE index_name = %s").format(SOURCES), (name,)
    ).fetchone()
    return "none" if row is None else str(row[0])


def set_capture(conn: Connection, name: str, mode: str) -> None:
    conn.execute(sql.SQL("UPDATE {} SET capture = %s WHERE index_name = %s").format(SOURCES), (mode, name))


def synced_at(conn: Connection, name: str) -> datetime | None:
    """When attached index NAME last synced (None: never, so it holds none of its table yet)."""
    row = conn.execute(
        sql.SQL("SELECT synced_at FROM {} WHERE index_name = %s").format(SOURCES), (name,)
    ).fetchone()
    return None if row is None else row[0]


def set_spec_version(conn: Connection, name: str, version: int) -> None:
    """Record that every row of index `name` now holds sketches of spec `version` (reindex)."""
    conn.execute(sql.SQL("UPDATE {} SET spec_version = %s WHERE name = %s").format(INDEXES), (version, name))


def mark_synced(conn: Connection, name: str) -> None:
    conn.execute(sql.SQL("UPDATE {} SET synced_at = now() WHERE index_name = %s").format(SOURCES), (name,))


def mark_filled(conn: Connection, name: str, wordless: int, *, filled: bool) -> None:
    """Record a fill of index NAME in an application's column and the rows it found whose text has
    no words (they keep no sketch, so `status` tells them from the rows a sync would fill): when
    it filled rows, is the first, or found another count (an idle fill writes nothing)."""
    conn.execute(
        sql.SQL(
            "UPDATE {} SET synced_at = now(), wordless = %s WHERE index_name = %s"
            " AND (%s OR synced_at IS NULL OR wordless IS DISTINCT FROM %s)"
        ).format(SOURCES),
        (wordless, name, filled, wordless),
    )


def wordless(conn: Connection, name: str) -> int:
    """The rows with text and no words the last fill of index NAME found (0 before any)."""
    row = conn.execute(
        sql.SQL("SELECT coalesce(wordless, 0) FROM {} WHERE index_name = %s").format(SOURCES), (name,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def readable_tables() -> list[sql.Identifier]:
    """The catalog tables a reader role needs to SELECT (to load an index's parameters, and the
    marks of pairs --new for simdb.pairs_since)."""
    return [INDEXES, TABLES, SOURCES, PAIR_MARKS, in_schema(VERSION_TABLE)]


def sync_grants(role: sql.Identifier) -> list[sql.Composed]:
    """What a writer role needs of the catalog to sync an attached index: read the source it
    follows, and record when it synced (those columns only)."""
    return [
        sql.SQL("GRANT SELECT ON {} TO {}").format(SOURCES, role),
        sql.SQL("GRANT UPDATE (synced_at, wordless) ON {} TO {}").format(SOURCES, role),
        *mark_grants(role),
    ]


def mark_grants(role: sql.Identifier) -> list[sql.Composed]:
    """What a writer role needs of the catalog to keep the marks of pairs --new."""
    return [sql.SQL("GRANT SELECT, INSERT, UPDATE ON {} TO {}").format(PAIR_MARKS, role)]


def pair_mark(conn: Connection, name: str, consumer: str) -> str | None:
    """The snapshot in which `consumer`'s last `pairs --new` of index NAME read its pairs (None
    before its first), locked until the caller's transaction ends."""
    row = conn.execute(
        sql.SQL("SELECT mark::text FROM {} WHERE index_name = %s AND consumer = %s FOR UPDATE").format(
            PAIR_MARKS
        ),
        (name, consumer),
    ).fetchone()
    return None if row is None else str(row[0])


def remove_pair_marks(conn: Connection, name: str) -> None:
    """Every consumer's mark of index NAME."""
    conn.execute(sql.SQL("DELETE FROM {} WHERE index_name = %s").format(PAIR_MARKS), (name,))


def set_pair_mark(conn: Connection, name: str, consumer: str) -> None:
    """`consumer`'s mark of index NAME: the snapshot of the caller's (repeatable read) transaction."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (index_name, consumer, mark) VALUES (%s, %s, pg_current_snapshot())"
            " ON CONFLICT (index_name, consumer) DO UPDATE SET mark = excluded.mark, taken_at = now()"
        ).format(PAIR_MARKS),
        (name, consumer),
    )


@dataclass(frozen=True)
class LoadMark:
    """How far a `simdb load` of index NAME under way got: the file (its path, and what fstat
    said of it) and the rows copied from it."""

    source: str
    identity: str
    rows: int


def load_mark(conn: Connection, name: str) -> LoadMark | None:
    """The load of index NAME under way (None when there is none), locked until the caller's
    transaction ends."""
    row = conn.execute(
        sql.SQL("SELECT source, identity, rows FROM {} WHERE index_name = %s FOR UPDATE").format(LOADS),
        (name,),
    ).fetchone()
    return None if row is None else LoadMark(str(row[0]), str(row[1]), int(row[2]))


def begin_load(conn: Connection, name: str, source: str, identity: str) -> None:
    """Record a load of index NAME from a file, at its first row."""
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (index_name, source, identity) VALUES (%s, %s, %s) ON CONFLICT (index_name)"
            " DO UPDATE SET source = excluded.source, identity = excluded.identity, rows = 0,"
            " started_at = now()"
        ).format(LOADS),
        (name, source, identity),
    )


def advance_load(conn: Connection, name: str, rows: int) -> None:
    """Count `rows` more rows copied by the load of index NAME (in the transaction that copied them)."""
    conn.execute(sql.SQL("UPDATE {} SET rows = rows + %s WHERE index_name = %s").format(LOADS), (rows, name))


def end_load(conn: Connection, name: str) -> None:
    """The load of index NAME is done."""
    conn.execute(sql.SQL("DELETE FROM {} WHERE index_name = %s").format(LOADS), (name,))
