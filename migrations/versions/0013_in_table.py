"""Indexes in the application's own table: _sources records their sketch column.

Revision ID: 0013
Revises: 0012

An index in the application's table (`simdb attach --fingerprint-column`) reads the table's own
sketch column, and may have no text column. Readers may now read _sources too: loading any index
asks it where the index's rows live.
"""

from psycopg import sql

from simdb.db.sabridge import migration_connection
from simdb.index import catalog, dispatch, storage
from simdb.index import lifecycle as index

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(
        "ALTER TABLE simdb._sources ALTER COLUMN text_column DROP NOT NULL,"
        " ADD COLUMN sketch_column text,"
        " ADD CONSTRAINT _sources_reads_something"
        " CHECK (text_column IS NOT NULL OR sketch_column IS NOT NULL)"
    )
    readers = raw.execute(
        "SELECT DISTINCT grantee FROM information_schema.role_table_grants"
        " WHERE table_schema = 'simdb' AND table_name = '_indexes' AND privilege_type = 'SELECT'"
        " AND grantee <> current_user AND grantee <> 'PUBLIC'"
    ).fetchall()
    for (role,) in readers:
        raw.execute(sql.SQL("GRANT SELECT ON simdb._sources TO {}").format(sql.Identifier(role)))


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        source = catalog.source_row(raw, name)
        if source is not None and source.sketch_column:
            made = index.get(raw, name)
            index.drop_objects(raw, name, storage.of(source).drop_statements(made))
    dispatch.regenerate(raw)
    raw.execute(
        "ALTER TABLE simdb._sources DROP CONSTRAINT _sources_reads_something, DROP COLUMN sketch_column,"
        " ALTER COLUMN text_column SET NOT NULL"
    )
