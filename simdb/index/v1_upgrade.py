"""Moving indexes made under layout v1 (a surrogate id, generated permuted or band-key columns
with their B-trees, key UNIQUE) to layout v2 (key as primary key, B-trees on expressions of the
sketch), keeping every row and answering queries throughout.

The move has two steps, because a query already running one of an index's v1 functions when
the first step commits still reads the old columns:
1. `prepare` (migration 0006, in its transaction): the primary key on key, the new B-trees and
   the new functions; the old columns stay, unread.
2. `finish` (after the migration has committed, one transaction per index): the old columns are
   dropped and the table rewritten without them. Queries wait for the rewrite, then go on.
"""

from __future__ import annotations

from psycopg import sql

from simdb.db.connection import Connection
from simdb.index import catalog, names
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index

OLD_ID = "id"  # layout v1's surrogate key: a table that still has it is not finished


def prepare(conn: Connection, index: Index) -> None:
    """Step 1 for one index, if it is not done yet: everything of layout v2 but the rewrite."""
    if _constraint(conn, index.table, "p", "PRIMARY KEY (key)"):
        return
    unique_key = _constraint(conn, index.table, "u", "UNIQUE (key)")
    old_primary = _constraint(conn, index.table, "p", f"PRIMARY KEY ({OLD_ID})")
    for column in index.columns:  # the old B-trees have the names of the new ones
        conn.execute(sql.SQL("DROP INDEX {}").format(names.btree(index.name, column)))
    changes = [
        sql.SQL("DROP CONSTRAINT {}").format(sql.Identifier(constraint))
        for constraint in (unique_key, old_primary)
        if constraint
    ]
    changes.append(
        sql.SQL("ADD CONSTRAINT {} PRIMARY KEY (key)").format(
            sql.Identifier(names.primary_key_name(index.name))
        )
    )
    conn.execute(sql.SQL("ALTER TABLE {} {}").format(index.table, sql.SQL(", ").join(changes)))
    for statement in index.btrees():
        conn.execute(statement)
    indexes.remake_functions(conn, index)


def unfinished(conn: Connection) -> list[str]:
    """The indexes past step 1 whose tables still hold layout v1's columns."""
    return [
        name
        for name in catalog.index_names(conn)
        if indexes.has_column(conn, name, OLD_ID)
        and _constraint(conn, names.table(name), "p", "PRIMARY KEY (key)") is not None
    ]


def finish_all(conn: Connection) -> list[str]:
    """Step 2 for every prepared index, each in a transaction of its own; the names it moved."""
    moved = unfinished(conn)
    for name in moved:
        with conn.transaction():
            finish(conn, indexes.get(conn, name))
    return moved


def finish(conn: Connection, index: Index) -> None:
    """Step 2 for one prepared index (in the caller's transaction): drop the old columns and
    rewrite the table without them (CLUSTER on the key, which frees their space)."""
    old = [OLD_ID, *index.columns]
    conn.execute(
        sql.SQL("ALTER TABLE {} {}").format(
            index.table,
            sql.SQL(", ").join(sql.SQL("DROP COLUMN IF EXISTS {}").format(sql.Identifier(c)) for c in old),
        )
    )
    conn.execute(
        sql.SQL("CLUSTER {} USING {}").format(index.table, sql.Identifier(names.primary_key_name(index.name)))
    )
    conn.execute(sql.SQL("ANALYZE {}").format(index.table))


def _constraint(conn: Connection, table: sql.Identifier, kind: str, definition: str) -> str | None:
    """The name of the table's constraint of `kind` (p, u) whose definition is `definition`."""
    row = conn.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = %s"
        " AND pg_get_constraintdef(oid) = %s",
        (table.as_string(conn), kind, definition),
    ).fetchone()
    return None if row is None else str(row[0])
