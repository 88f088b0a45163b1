"""Jaccard mode, SQL side: simdb.jaccard_estimate.

Revision ID: 0002
Revises: 0001
"""

from alembic import op

from simdb.resources import function_sql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().connection.driver_connection.execute(function_sql("jaccard_estimate", 1))


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(
        "DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[])"
    )
