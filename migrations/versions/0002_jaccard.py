"""Jaccard mode, SQL side: simdb.jaccard_estimate.

Revision ID: 0002
Revises: 0001
"""

from simdb.db.resources import function_sql
from simdb.db.sabridge import migration_connection

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    migration_connection().execute(function_sql("jaccard_estimate", 1))


def downgrade() -> None:
    migration_connection().execute("DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[])")
