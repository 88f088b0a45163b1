"""simdb core: the catalog of indexes and the SQL functions (hamming, permute, near, ...).

Revision ID: 0001
Revises:
"""

from alembic import op
from psycopg import sql

from simdb.resources import sql_text

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _run_script(script: str) -> None:
    """Run a multi-statement script through psycopg's simple-query path ('%' stays literal)."""
    op.get_bind().connection.driver_connection.execute(script)


def upgrade() -> None:
    _run_script(sql_text("001_core.sql"))


def downgrade() -> None:
    raw = op.get_bind().connection.driver_connection
    for (name,) in raw.execute("SELECT name FROM simdb._indexes").fetchall():
        for table in (name, f"{name}__clusters"):
            raw.execute(sql.SQL("DROP TABLE IF EXISTS simdb.{}").format(sql.Identifier(table)))
        for function in (f"{name}__near", f"{name}__pairs"):
            raw.execute(sql.SQL("DROP FUNCTION IF EXISTS simdb.{}").format(sql.Identifier(function)))
    _run_script(
        "DROP FUNCTION simdb.explain_near(text, bigint, integer);"
        "DROP FUNCTION simdb.pairs(text, integer);"
        "DROP FUNCTION simdb.near_key(text, text, integer);"
        "DROP FUNCTION simdb.near(text, bigint, integer);"
        "DROP FUNCTION simdb._checked_distance(text, integer);"
        "DROP FUNCTION simdb.permute(bigint, integer[], integer[]);"
        "DROP FUNCTION simdb.from_hex(text);"
        "DROP FUNCTION simdb.to_hex(bigint);"
        "DROP FUNCTION simdb.hamming(bigint, bigint);"
        "DROP TABLE simdb._sources;"
        "DROP TABLE simdb._tables;"
        "DROP TABLE simdb._indexes;"
    )
