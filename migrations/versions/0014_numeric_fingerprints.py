"""simdb.near and explain_near take a fingerprint as an unsigned number (numeric).

Revision ID: 0014
Revises: 0013
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# psycopg sends a Python int >= 2^63 as a numeric, and asyncpg's `$1::numeric` takes one: neither
# fits simdb.near's bigint. The integer and smallint forms beside the numeric one keep a small
# number (psycopg sends a small int as a smallint) from being ambiguous between bigint and numeric.
FUNCTIONS = (
    ("_unsigned_fingerprint", 1),
    ("near_numeric", 1),
    ("explain_near_numeric", 1),
)
ADDED = tuple(
    f"simdb.{name}(text, {kind}, integer)"
    for name in ("near", "explain_near")
    for kind in ("numeric", "integer", "smallint")
)


def upgrade() -> None:
    raw = migration_connection()
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))
    raw.execute(sql_text("comments/numeric_fingerprints.v1.sql"))


def downgrade() -> None:
    raw = migration_connection()
    for signature in ADDED:
        raw.execute(f"DROP FUNCTION {signature}")
    raw.execute("DROP FUNCTION simdb_internal._unsigned_fingerprint(numeric, integer)")
