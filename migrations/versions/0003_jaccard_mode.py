"""Jaccard mode: MinHash parameters in the catalog; the similar SQL functions.

The catalog gets each index's mode and MinHash parameters; the functions are simdb.similar,
similar_key, similar_pairs and explain_similar.

Revision ID: 0003
Revises: 0002
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection
from simdb.index import catalog
from simdb.index import lifecycle as index

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The functions this revision creates or replaces (sql/functions/NAME.vN.sql), in a dependency-safe
# order. jaccard_estimate v2 returns double precision, not real, so the upgrade drops v1 first;
# _checked_distance v2 replaces v1 in place (it checks the index's mode). The downgrade runs the
# v1 files again.
FUNCTIONS = (
    ("jaccard_estimate", 2),
    ("_checked_mode", 1),
    ("_checked_distance", 2),
    ("_checked_similarity", 1),
    ("similar", 1),
    ("similar_key", 1),
    ("similar_pairs", 1),
    ("explain_similar", 1),
)


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(sql_text("catalog/0003_index_modes.sql"))
    raw.execute("DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[])")
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))


def downgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw, mode="jaccard"):
        index.drop_objects(raw, name)
    raw.execute(
        "DROP FUNCTION simdb.explain_similar(text, bigint[], double precision);"
        "DROP FUNCTION simdb.similar_pairs(text, double precision);"
        "DROP FUNCTION simdb.similar_key(text, text, double precision);"
        "DROP FUNCTION simdb.similar(text, bigint[], double precision);"
        "DROP FUNCTION simdb._checked_similarity(text, double precision);"
        "DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[]);"
    )
    raw.execute(function_sql("_checked_distance", 1))  # as revision 0001 made it (no mode check)
    raw.execute(
        "DROP FUNCTION simdb._checked_mode(text, text, text);"
        "ALTER TABLE simdb._indexes DROP CONSTRAINT _indexes_mode_parameters,"
        " DROP COLUMN mode, DROP COLUMN threshold, DROP COLUMN permutations, DROP COLUMN bands,"
        " DROP COLUMN band_rows, ALTER COLUMN max_distance SET NOT NULL, ALTER COLUMN blocks SET NOT NULL,"
        " ALTER COLUMN block_widths SET NOT NULL;"
    )
    raw.execute(function_sql("jaccard_estimate", 1))  # as revision 0002 made it (real)
