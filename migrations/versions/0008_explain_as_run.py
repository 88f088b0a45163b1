"""explain_near and explain_similar show the plan that runs.

They run the index's statement prepared and executed under its function's settings (a generic plan
on one server), where they planned it with the query's value folded in and could show a plan the
function never uses.

Revision ID: 0008
Revises: 0007
"""

from simdb.db.resources import function_sql
from simdb.db.sabridge import migration_connection

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(function_sql("_explained", 1))
    raw.execute(function_sql("explain_near", 2))
    raw.execute(function_sql("explain_similar", 2))


def downgrade() -> None:
    raw = migration_connection()
    raw.execute(function_sql("explain_near", 1))
    raw.execute(function_sql("explain_similar", 1))
    raw.execute("DROP FUNCTION simdb._explained(text, text, text)")
