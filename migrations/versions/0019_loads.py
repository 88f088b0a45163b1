"""Loads that resume: simdb._loads records how far each `simdb load` under way got.

Revision ID: 0019
Revises: 0018
"""

from simdb.db.resources import sql_text
from simdb.db.sabridge import migration_connection

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    migration_connection().execute(sql_text("catalog/0019_loads.sql"))


def downgrade() -> None:
    migration_connection().execute("DROP TABLE simdb._loads")
