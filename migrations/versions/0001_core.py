"""simdb core: the catalog of indexes and the SQL functions.

The functions: hamming, to_hex, from_hex, permute, near, near_key, pairs and explain_near.

Revision ID: 0001
Revises:
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection
from simdb.index import catalog
from simdb.index import lifecycle as index

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The functions this revision creates (sql/functions/NAME.vN.sql), in a dependency-safe order:
# LANGUAGE sql bodies are checked at creation (plpgsql ones at first call), so a function comes after
# any its sql body calls.
FUNCTIONS = (
    ("hamming", 1),
    ("to_hex", 1),
    ("from_hex", 1),
    ("permute", 1),
    ("near", 1),
    ("near_key", 1),
    ("pairs", 1),
    ("explain_near", 1),
    ("_checked_distance", 1),
)


def _run_script(script: str) -> None:
    """Run a multi-statement script through psycopg's simple-query path ('%' stays literal)."""
    migration_connection().execute(script)


def upgrade() -> None:
    _run_script(sql_text("catalog/0001_catalog_tables.sql"))
    for name, version in FUNCTIONS:
        _run_script(function_sql(name, version))


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        index.drop_objects(raw, name)
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
