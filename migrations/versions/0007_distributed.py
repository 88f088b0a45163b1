"""Distributed indexes: simdb.near_key reads the row's fingerprint, then probes, in two statements
(on Citus, one statement would be sent whole to the key's shard, which cannot run the probe).

Revision ID: 0007
Revises: 0006
"""

from alembic import op

from simdb.resources import function_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.get_bind().connection.driver_connection.execute(function_sql("near_key", 3))


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(function_sql("near_key", 2))
