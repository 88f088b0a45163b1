"""Which rows of an index changed after a snapshot: what `pairs --new` and simdb.pairs_since read.

An index that tracks changes has a column holding, for each row, the id of the transaction that
last wrote its sketch (xid8): its default gives an inserted row the id, and a trigger gives it to
a row whose sketch an UPDATE changes (simdb's upserts, a sync, a reindex, or an application's own
SQL). A row changed after a snapshot is one whose id that snapshot does not see
(pg_visible_in_snapshot): exact under concurrent writers, where a timestamp or a sequence is not
(a transaction may commit after a later one). Rows written before tracking began hold NULL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, PermissionDenied
from simdb.index import catalog, names, rowscan
from simdb.index.ddl import table_function

if TYPE_CHECKING:
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


def _changed_after(row: sql.Composable, mark: sql.Composable) -> sql.Composed:
    """The condition that `row` (an alias) changed after the snapshot `mark` (an SQL expression):
    its transaction at or past the snapshot's oldest open one, and not seen by it."""
    changed = sql.SQL("{}.{}").format(row, sql.Identifier(names.CHANGED_COLUMN))
    return sql.SQL(
        "({changed} >= pg_snapshot_xmin({mark}) AND NOT pg_visible_in_snapshot({changed}, {mark}))"
    ).format(changed=changed, mark=mark)


def _drop_trigger(conn: Connection, index: Index) -> None:
    conn.execute(
        sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(sql.Identifier(names.CHANGED_TRIGGER), index.table)
    )


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
        _drop_trigger(conn, index)
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
    _drop_trigger(conn, index)
    conn.execute(
        sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS {}").format(
            index.table, sql.Identifier(names.CHANGED_COLUMN)
        )
    )
    catalog.remove_pair_marks(conn, index.name)


def fresh_pairs_function(index: Index, conn: Connection) -> sql.Composed:
    """CREATE FUNCTION NAME__fresh_pairs(cutoff, mark): the pairs (key_a < key_b, score) within
    the cutoff that involve a row changed after the snapshot `mark`. One statement: the changed
    rows found through their B-tree, and for each the index's near statement, inlined (a function
    call per row costs more than its probes). Planned for each call (the mark decides how many
    rows are new), without JIT (compiling the probes' expressions took about 0.3 s a call).
    Every index has it; it answers once the index tracks changes."""
    near = index.near_statement(sql.SQL("f.{}").format(sql.Identifier(index.sketch_column)), sql.SQL("$1"))
    statement = sql.SQL(
        "SELECT DISTINCT least(f.key, m.key), greatest(f.key, m.key), m.{score}"
        " FROM {table} AS f CROSS JOIN LATERAL ({near}) AS m WHERE m.key <> f.key AND {changed}"
    ).format(
        score=sql.Identifier(index.score_column),
        table=index.table,
        near=near,
        changed=_changed_after(sql.Identifier("f"), sql.SQL("$2")),
    )
    return table_function(
        names.fresh_pairs_function(index.name),
        f"{index.cutoff_column} {index.cutoff_type}, mark pg_snapshot",
        f"key_a text, key_b text, {index.score_column} {index.score_type}",
        "SET plan_cache_mode = force_custom_plan SET jit = off",
        statement.as_string(conn),
    )


def fresh_pairs(index: Index, mark: str, cutoff: float) -> tuple[sql.Composed, list[object]]:
    """The pairs (aliased p) within `cutoff` that involve a row changed after the snapshot `mark`,
    and the statement's parameters: NAME__fresh_pairs, as simdb.pairs_since runs it too."""
    statement = sql.SQL("SELECT p.* FROM {}(%s::{}, %s::pg_snapshot) AS p").format(
        names.fresh_pairs_function(index.name), sql.SQL(index.cutoff_type)
    )
    return statement, [cutoff, mark]


# What a changed row's near statement costs per B-tree it probes (the probe and its candidates'
# rows), against finding the changed rows' pairs in memory (every fingerprint read, then a pass
# over them per table looking the changed rows' prefixes up). Measured on one machine the same
# day (PG 15, 21 B-trees, default shared_buffers, 2 threads): probing 7 us a B-tree at 1M rows,
# whose pages stay in PostgreSQL's buffers, and 85 us at 10M, where each probe reads its pages
# from the OS cache; in memory 0.11 us a row at 1M and 0.13 us at 10M (0.33 us with 1% changed).
# The larger probing figure is taken: probing where it pays at any size (at 10M, below about
# 700 changed rows, as measured; at 1M it gives up probing's 0.08 s lead on 200 rows).
PROBE_S_PER_BTREE = 85e-6
PAIRING_S_PER_ROW = 0.13e-6


def probing_pays(conn: Connection, index: Index, mark: str) -> bool:
    """Whether a near query for each row changed after `mark` costs less than reading every row
    and finding the changed rows' pairs in memory: few changed rows, or few rows."""
    found = conn.execute(
        sql.SQL(
            "SELECT (SELECT count(*) FROM {table} AS f WHERE {changed}),"
            " (SELECT reltuples FROM pg_catalog.pg_class WHERE oid = %s::regclass)"
        ).format(table=index.table, changed=_changed_after(sql.Identifier("f"), sql.SQL("%s::pg_snapshot"))),
        (mark, mark, names.qualified(index.name)),
    ).fetchone()
    fresh, rows = (int(found[0]), float(found[1])) if found else (0, 0.0)
    return fresh * PROBE_S_PER_BTREE * len(index.columns) <= max(rows, 0.0) * PAIRING_S_PER_ROW


def changed_rows(mark: str) -> rowscan.Where:
    """The condition that row r changed after `mark`, and its parameters."""
    return _changed_after(sql.Identifier("r"), sql.SQL("%s::pg_snapshot")), [mark, mark]


def either_changed(mark: str) -> tuple[sql.Composed, list[object]]:
    """The condition that row a or row b of a pair changed after `mark`, and its parameters."""
    snapshot = sql.SQL("%s::pg_snapshot")
    either = sql.SQL("({} OR {})").format(
        _changed_after(sql.Identifier("a"), snapshot), _changed_after(sql.Identifier("b"), snapshot)
    )
    return either, [mark] * 4
