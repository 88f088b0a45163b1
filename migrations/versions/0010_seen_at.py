"""Index rows record when they were last seen (seen_at): retention by last seen.

Revision ID: 0010
Revises: 0009

Existing rows count as seen at the upgrade (a constant default: no table is rewritten), so a
prune after it never removes a row that an ingest would still have confirmed.
"""

from psycopg import sql

from simdb.db.sabridge import migration_connection
from simdb.index import catalog, names

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        raw.execute(
            sql.SQL(
                "ALTER TABLE {} ADD COLUMN IF NOT EXISTS seen_at timestamptz NOT NULL DEFAULT now()"
            ).format(names.table(name))
        )


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        raw.execute(sql.SQL("ALTER TABLE {} DROP COLUMN IF EXISTS seen_at").format(names.table(name)))
