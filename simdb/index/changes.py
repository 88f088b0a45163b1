"""Which rows of an index changed after a snapshot: what `pairs --new` and simdb.pairs_since read.

An index that tracks changes has a column holding, for each row, the id of the transaction that
last wrote its sketch (xid8): its default gives an inserted row the id, and a trigger gives it to
a row whose sketch an UPDATE changes (simdb's upserts, a sync, a reindex, or an application's own
SQL). A row changed after a snapshot is one whose id that snapshot does not see
(pg_visible_in_snapshot): exact under concurrent writers, where a timestamp or a sequence is not
(a transaction may commit after a later one). Rows written before tracking began hold NULL.
"""

from __future__ import annotations

from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, PermissionDenied
from simdb.index import catalog, names
from simdb.index.modes import Index


def check_trackable(index: Index) -> None:
    """Refuse an index whose rows simdb does not keep in its own table on one server."""
    if not index.storage.writes_own_rows:
        raise InvalidParameter(
            f"index {index.name!r} lives in an application's table ({index.storage.describe()}): "
            "pairs --new follows the rows of simdb's own tables",
            "run `simdb pairs` for every pair, or attach the table without --fingerprint-column "
            "(its fingerprints in simdb's own table)",
        )
    if index.placement.distributed:
        raise InvalidParameter(
            f"index {index.name!r} is distributed ({index.placement.describe()}): pairs --new follows "
            "an index on one server (transaction ids are each node's own)",
            "run `simdb pairs` for every pair",
        )


def tracked(conn: Connection, index: Index) -> bool:
    """Whether index NAME tracks changes (its table has the column)."""
    found = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass AND attname = %s"
        " AND NOT attisdropped",
        (names.qualified(index.name), names.CHANGED_COLUMN),
    ).fetchone()
    return found is not None


def check_writable(conn: Connection, index: Index) -> None:
    """Refuse, before any pair is read, a role that may not start tracking index NAME (that takes
    the table's owner) or may not keep a mark, naming the role that may."""
    row = conn.execute(
        "SELECT current_user, pg_get_userbyid(c.relowner), pg_has_role(c.relowner, 'USAGE'),"
        " has_table_privilege(%s, 'INSERT') AND has_table_privilege(%s, 'UPDATE')"
        " FROM pg_class AS c WHERE c.oid = %s::regclass",
        (catalog.PAIR_MARKS.as_string(conn),) * 2 + (names.qualified(index.name),),
    ).fetchone()
    if row is None:
        return
    role, owner, owns, may_mark = row
    marks = catalog.PAIR_MARKS.as_string(conn)
    if not tracked(conn, index) and not owns:
        raise PermissionDenied(
            f"role {role!r} cannot start tracking the changes of index {index.name!r}: that alters "
            f"its table, which role {owner!r} owns",
            f"run the first `simdb pairs {index.name} --new` as role {owner!r}; later runs need a writer",
        )
    if not may_mark:
        raise PermissionDenied(
            f"role {role!r} cannot keep a mark of index {index.name!r} in {marks}",
            f"run it as role {owner!r}, or grant the role that: `simdb grant {index.name} --writer {role}`; "
            f"`simdb pairs {index.name}` lists every pair without a mark",
        )


def track(conn: Connection, index: Index) -> None:
    """Start tracking changes, in one transaction: the column (NULL for the rows there now), its
    default, the trigger and a B-tree over the rows changed from now on. Needs the table's owner."""
    check_trackable(index)
    column = sql.Identifier(names.CHANGED_COLUMN)
    sketch = sql.Identifier(index.sketch_column)
    trigger = sql.Identifier(names.CHANGED_TRIGGER)
    with conn.transaction():
        conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} xid8").format(index.table, column))
        conn.execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN {} SET DEFAULT pg_current_xact_id()").format(
                index.table, column
            )
        )
        conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(trigger, index.table))
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER {trigger} BEFORE UPDATE OF {sketch} ON {table} FOR EACH ROW"
                " WHEN (OLD.{sketch} IS DISTINCT FROM NEW.{sketch}) EXECUTE FUNCTION {function}()"
            ).format(
                trigger=trigger,
                sketch=sketch,
                table=index.table,
                function=names.internal("_mark_changed"),
            )
        )
        conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} ({}) WHERE {} IS NOT NULL").format(
                sql.Identifier(names.changed_btree_name(index.name)), index.table, column, column
            )
        )


def untrack(conn: Connection, index: Index) -> None:
    """Stop tracking (before the table is distributed), in the caller's transaction: the column,
    its trigger and B-tree, and the marks go."""
    conn.execute(
        sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(names.CHANGED_TRIGGER), index.table)
    )
    conn.execute(
        sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS {}").format(
            index.table, sql.Identifier(names.CHANGED_COLUMN)
        )
    )
    catalog.remove_pair_marks(conn, index.name)


def fresh_pairs(index: Index, mark: str, cutoff: float) -> tuple[sql.Composed, list[object]]:
    """The pairs (aliased p: key_a < key_b, score) within `cutoff` that involve a row changed
    after the snapshot `mark`, and the statement's parameters: simdb_internal._fresh_pairs, which
    simdb.pairs_since runs too (the index's near function for each such row)."""
    statement = sql.SQL(
        "SELECT p.key_a, p.key_b, p.score_value::{score_type} AS {score}"
        " FROM {fresh}(%s, %s::pg_snapshot, %s::{cutoff_type}, %s, %s) AS p"
    ).format(
        score_type=sql.SQL(index.score_type),
        score=sql.Identifier(index.score_column),
        fresh=names.internal("_fresh_pairs"),
        cutoff_type=sql.SQL(index.cutoff_type),
    )
    return statement, [index.name, mark, cutoff, index.sketch_column, index.score_column]
