"""simdb.near dispatches through static branches generated from the catalog.

The hand-written functions become simdb._near_dynamic (the path for errors and anything no branch
serves), and simdb.near is made by simdb.index.dispatch from the catalog, here and on every create and
drop.

Revision ID: 0005
Revises: 0004
"""

from simdb.db.sabridge import migration_connection
from simdb.index import dispatch

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(
        "ALTER FUNCTION simdb.near(text, bigint, integer) RENAME TO _near_dynamic;"
        "ALTER FUNCTION simdb.near(text, bit, integer) RENAME TO _near_dynamic;"
    )
    dispatch.regenerate(raw)


def downgrade() -> None:
    raw = migration_connection()
    raw.execute(
        "DROP FUNCTION simdb.near(text, bigint, integer);"
        "DROP FUNCTION simdb.near(text, bit, integer);"
        "ALTER FUNCTION simdb._near_dynamic(text, bigint, integer) RENAME TO near;"
        "ALTER FUNCTION simdb._near_dynamic(text, bit, integer) RENAME TO near;"
    )
