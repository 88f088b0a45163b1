"""Fingerprint functions take every form simdb.near takes; permute checks splits.

simdb.hamming, to_hex and permute take a fingerprint in every form simdb.near takes; permute
refuses block widths and orders that are not a split of 64 bits.

Revision ID: 0016
Revises: 0015
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# psycopg sends a Python int >= 2^63 as a numeric (and a small one as a smallint or an integer):
# simdb.near took all of them since 0014, hamming, to_hex and permute only a bigint or hex text.
FUNCTIONS = (
    ("_fingerprint_of", 1),
    ("hamming_numeric", 1),
    ("to_hex_forms", 1),
    ("permute_numeric", 1),
    ("permute", 2),
)
ADDED = (
    *(
        f"simdb.hamming({a}, {b})"
        for a, b in (
            ("numeric", "numeric"),
            ("integer", "integer"),
            ("smallint", "smallint"),
            ("numeric", "text"),
            ("text", "numeric"),
            ("integer", "text"),
            ("text", "integer"),
            ("smallint", "text"),
            ("text", "smallint"),
        )
    ),
    *(f"simdb.to_hex({kind})" for kind in ("numeric", "integer", "smallint", "text")),
    *(f"simdb.permute({kind}, integer[], integer[])" for kind in ("numeric", "integer", "smallint")),
    "simdb_internal._fingerprint_of(numeric)",
)


def upgrade() -> None:
    raw = migration_connection()
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))
    raw.execute(sql_text("comments/fingerprint_forms.v1.sql"))


def downgrade() -> None:
    raw = migration_connection()
    for signature in ADDED:
        raw.execute(f"DROP FUNCTION {signature}")
    raw.execute(function_sql("permute", 1))
    comments = sql_text("comments/public_functions.v1.sql").split("COMMENT ON FUNCTION ")
    (permute,) = [comment for comment in comments if comment.startswith("simdb.permute(bigint,")]
    raw.execute("COMMENT ON FUNCTION " + permute)  # (its comment as it was)
