"""Index rows keep their file's modification time (mtime_ns).

Ingest then skips the files whose size and modification time are unchanged, without reading them.
NULL for rows that are not files.

Revision ID: 0009
Revises: 0008
"""

from psycopg import sql

from simdb.db.sabridge import migration_connection
from simdb.index import catalog, names

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        raw.execute(
            sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS mtime_ns bigint").format(names.table(name))
        )


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        raw.execute(sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS mtime_ns").format(names.table(name)))
