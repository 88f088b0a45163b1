"""B-trees that carry the fingerprint (_indexes.covering), read index-only by near.

Revision ID: 0020
Revises: 0019
"""

from simdb.db.resources import sql_text
from simdb.db.sabridge import migration_connection

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    migration_connection().execute(sql_text("catalog/0020_covering_btrees.sql"))


def downgrade() -> None:
    migration_connection().execute("ALTER TABLE simdb._indexes DROP COLUMN covering")
