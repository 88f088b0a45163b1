"""Distributed indexes: near_key in two statements; from_hex refuses bad hex.

simdb.near_key reads the row's fingerprint, then probes, in two statements (on Citus, one statement
would be sent whole to the key's shard, which cannot run the probe). simdb.from_hex refuses what is
not 1 to 16 hex digits (it shortened 17 or 18 and read '' as 0).

Revision ID: 0007
Revises: 0006
"""

from simdb.db.resources import function_sql
from simdb.db.sabridge import migration_connection

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


FUNCTIONS = (("near_key", 3), ("from_hex", 2))


def upgrade() -> None:
    raw = migration_connection()
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))


def downgrade() -> None:
    raw = migration_connection()
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version - 1))
