"""Attached indexes record their change capture: 'triggers' or 'none'.

Revision ID: 0012
Revises: 0011

Indexes attached before this revision keep syncing by comparing snapshots ('none'); the queue,
triggers and status view of an index attached with triggers are its own objects (simdb.index.names).
"""

from simdb.db.sabridge import migration_connection
from simdb.follow import queue as capture
from simdb.index import catalog

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(
        "ALTER TABLE simdb._sources ADD COLUMN capture text NOT NULL DEFAULT 'none'"
        " CHECK (capture IN ('none', 'triggers'))"
    )


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        capture.remove(raw, name)
    raw.execute("ALTER TABLE simdb._sources DROP COLUMN capture")
