"""Pairs that follow new rows: the marks of `pairs --new`, and simdb.pairs_since.

simdb._pair_marks keeps, for each index and consumer, the snapshot of its last `pairs --new`;
simdb_internal._mark_changed is the trigger function of an index that tracks changes (its
`changed` column, made by the first `pairs --new`: simdb.index.changes); simdb.pairs_since and
simdb.similar_pairs_since return the pairs involving a row changed after a mark, through each
index's new simdb_internal."NAME__fresh_pairs". Roles granted
before may read the marks, and writers keep them.

Revision ID: 0018
Revises: 0017
"""

from psycopg import sql

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection
from simdb.index import catalog, names
from simdb.index import lifecycle as index

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

FUNCTIONS = (("_fresh_pairs", 1), ("pairs_since", 1), ("similar_pairs_since", 1))


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(sql_text("catalog/0018_pair_marks.sql"))
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))
    raw.execute(sql_text("comments/pairs_since.v1.sql"))
    for name in catalog.index_names(raw):  # (each gets its NAME__fresh_pairs)
        index.remake_functions(raw, index.get(raw, name))
    writers = raw.execute(
        "SELECT DISTINCT grantee FROM information_schema.column_privileges"
        " WHERE table_schema = 'simdb' AND table_name = '_sources' AND column_name = 'synced_at'"
        " AND privilege_type = 'UPDATE' AND grantee <> current_user AND grantee <> 'PUBLIC'"
    ).fetchall()
    for (role,) in writers:
        for statement in catalog.mark_grants(sql.Identifier(role)):
            raw.execute(statement)
    readers = raw.execute(
        "SELECT DISTINCT grantee FROM information_schema.table_privileges"
        " WHERE table_schema = 'simdb' AND table_name = '_indexes' AND privilege_type = 'SELECT'"
        " AND grantee <> current_user AND grantee <> 'PUBLIC'"
    ).fetchall()
    for (role,) in readers:
        raw.execute(sql.SQL("GRANT SELECT ON simdb._pair_marks TO {}").format(sql.Identifier(role)))


def downgrade() -> None:
    """The marks, the functions and the trigger function go (with the triggers of the indexes
    that track changes; their `changed` columns stay, unread)."""
    raw = migration_connection()
    raw.execute("DROP FUNCTION simdb.pairs_since(text, pg_snapshot, integer)")
    raw.execute("DROP FUNCTION simdb.similar_pairs_since(text, pg_snapshot, double precision)")
    raw.execute("DROP FUNCTION simdb_internal._fresh_pairs(text, pg_snapshot, anyelement)")
    for name in catalog.index_names(raw):
        raw.execute(sql.SQL("DROP FUNCTION IF EXISTS {}").format(names.fresh_pairs_function(name)))
    raw.execute("DROP FUNCTION simdb_internal._mark_changed() CASCADE")
    raw.execute("DROP TABLE simdb._pair_marks")
