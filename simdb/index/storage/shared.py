"""B-trees the application already has: an index on the table whose definition is one of simdb's
sketch B-trees (a Django SimhashIndex or JaccardIndex of the same settings, an Alembic-made index
of the same expressions) serves simdb's queries as well, so simdb builds no second copy of it.

Definitions are compared as PostgreSQL prints them (pg_get_indexdef from USING on: access method,
key expressions, predicate): simdb's are built on an empty temporary copy of the table's columns,
in a transaction rolled back, so that the text is PostgreSQL's own for this server."""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from simdb.index.storage.base import btree_statements

if TYPE_CHECKING:
    from simdb.db.connection import Connection
    from simdb.index.scheme import IndexSQL
    from simdb.index.storage.column import InTable

SHAPE = "simdb_btree_shape"  # the temporary table's name (in pg_temp, rolled back)
ANSWERS = 256  # definitions remembered (per server, table's index definitions and simdb's statements)
_answers: dict[tuple[object, ...], dict[str, str]] = {}
# simdb's own B-trees on a table (names.app_btree_name) go with the index that made them, and
# those SQLAlchemy declares are found by their name: neither stands for another index's
OWNED = "simdb_"


def equivalents(conn: Connection, stored: InTable, index: IndexSQL) -> dict[str, str]:
    """simdb's sketch B-tree names (of stored.sketch_btree_names) that a valid index of the
    application's (not named simdb_...) on the table already is, each with that index's name.
    Only on one server: on Citus the shards' indexes are Citus's to make."""
    if index.placement.distributed:
        return {}
    theirs: dict[str, str] = {}
    for name, definition in conn.execute(
        "SELECT c.relname::text, pg_get_indexdef(x.indexrelid) FROM pg_index AS x"
        " JOIN pg_class AS c ON c.oid = x.indexrelid"
        " WHERE x.indrelid = %s::regclass AND x.indisvalid AND x.indisready ORDER BY 1",
        (stored.relation.as_string(conn),),
    ):
        if not name.startswith(OWNED):
            theirs.setdefault(_tail(definition), name)
    if not theirs:
        return {}
    statements = [statement.as_string(conn) for statement in stored.sketch_btrees(index, concurrently=False)]
    asked = (conn.info.dbname, tuple(sorted(theirs)), tuple(statements))  # (the statements name the table)
    if asked not in _answers:  # (sync --watch asks at every fill: one temporary table per process)
        if len(_answers) >= ANSWERS:
            _answers.clear()
        _answers[asked] = _definitions(conn, stored, index)
    return {name: theirs[made_as] for name, made_as in _answers[asked].items() if made_as in theirs}


def _definitions(conn: Connection, stored: InTable, index: IndexSQL) -> dict[str, str]:
    """What PostgreSQL prints (from USING on) for each of simdb's sketch B-trees of the table."""
    shape = sql.Identifier("pg_temp", SHAPE)
    with conn.transaction(force_rollback=True):
        conn.execute(sql.SQL("CREATE TEMPORARY TABLE {} (LIKE {})").format(shape, stored.relation))
        statements = btree_statements(index, shape, sql.Identifier(stored.sketch_column), SHAPE + "_{column}")
        definitions: dict[str, str] = {}
        for name, column, statement in zip(
            stored.sketch_btree_names(index), index.columns, statements, strict=True
        ):
            conn.execute(statement)
            row = conn.execute(
                "SELECT pg_get_indexdef(%s::regclass)",
                (sql.Identifier("pg_temp", f"{SHAPE}_{column}").as_string(conn),),
            ).fetchone()
            definitions[name] = _tail(str(row[0])) if row else ""
    return definitions


def _tail(definition: str) -> str:
    """An index's definition without its name and table: from USING on."""
    at = definition.find(" USING ")
    return definition[at:] if at >= 0 else definition
