"""128-bit fingerprints: the catalog, simdb.near and simdb.near_key for bit(128).

The catalog allows bits = 128; simdb.near for bit(128) fingerprints and for untyped ones (so that
the two typed forms are never ambiguous); simdb.near_key for either width.

Revision ID: 0004
Revises: 0003
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection
from simdb.index import catalog
from simdb.index import lifecycle as index

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The functions this revision creates or replaces (sql/functions/NAME.vN.sql): near_bit and
# near_text are overloads of simdb.near beside revision 0001's bigint one.
FUNCTIONS = (("near_bit", 1), ("near_text", 1), ("near_key", 2))


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(sql_text("catalog/0004_fingerprint_widths.sql"))
    for name, version in FUNCTIONS:
        raw.execute(function_sql(name, version))


def downgrade() -> None:
    raw = migration_connection()
    for name, bits, _ in catalog.simhash_limits(raw):
        if bits == 128:
            index.drop_objects(raw, name)
    raw.execute(
        "DROP FUNCTION simdb.near(text, text, integer);"
        "DROP FUNCTION simdb.near(text, bit, integer);"
        "ALTER TABLE simdb._indexes DROP CONSTRAINT _indexes_bits_check,"
        " ADD CONSTRAINT _indexes_bits_check CHECK (bits = 64);"
        "ALTER TABLE simdb._tables DROP CONSTRAINT _tables_prefix_bits_check,"
        " ADD CONSTRAINT _tables_prefix_bits_check CHECK (prefix_bits BETWEEN 1 AND 64);"
        "COMMENT ON COLUMN simdb._indexes.mode IS"
        " 'simhash: Hamming distance on 64-bit fingerprints; jaccard: MinHash signatures with LSH bands';"
    )
    raw.execute(function_sql("near_key", 1))
