"""Jaccard mode: the catalog's mode and MinHash parameters; simdb.similar, similar_key, similar_pairs,
explain_similar.

Revision ID: 0003
Revises: 0002
"""

from alembic import op
from psycopg import sql

from simdb.resources import sql_text

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# simdb._checked_distance as revision 0001 defined it (0003 made it name the mode of an index).
_CHECKED_DISTANCE_0001 = """
CREATE OR REPLACE FUNCTION simdb._checked_distance(index_name text, max_distance integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k_max integer := (SELECT i.max_distance FROM simdb._indexes AS i WHERE i.name = index_name);
    k integer := coalesce(max_distance, k_max);
BEGIN
    IF k_max IS NULL THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    IF k < 0 OR k > k_max THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, k_max, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    RETURN k;
END
$$;
"""


def upgrade() -> None:
    op.get_bind().connection.driver_connection.execute(sql_text("003_jaccard_mode.sql"))


def downgrade() -> None:
    raw = op.get_bind().connection.driver_connection
    for (name,) in raw.execute("SELECT name FROM simdb._indexes WHERE mode = 'jaccard'").fetchall():
        for table in (name, f"{name}__clusters"):
            raw.execute(sql.SQL("DROP TABLE IF EXISTS simdb.{}").format(sql.Identifier(table)))
        for function in (f"{name}__near", f"{name}__pairs"):
            raw.execute(sql.SQL("DROP FUNCTION IF EXISTS simdb.{}").format(sql.Identifier(function)))
    raw.execute(
        "DELETE FROM simdb._indexes WHERE mode = 'jaccard';"
        "DROP FUNCTION simdb.explain_similar(text, bigint[], double precision);"
        "DROP FUNCTION simdb.similar_pairs(text, double precision);"
        "DROP FUNCTION simdb.similar_key(text, text, double precision);"
        "DROP FUNCTION simdb.similar(text, bigint[], double precision);"
        "DROP FUNCTION simdb._checked_similarity(text, double precision);"
        "DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[]);"
        + _CHECKED_DISTANCE_0001
        + "DROP FUNCTION simdb._checked_mode(text, text, text);"
        "ALTER TABLE simdb._indexes DROP CONSTRAINT _indexes_mode_parameters,"
        " DROP COLUMN mode, DROP COLUMN threshold, DROP COLUMN permutations, DROP COLUMN bands,"
        " DROP COLUMN band_rows, ALTER COLUMN max_distance SET NOT NULL, ALTER COLUMN blocks SET NOT NULL,"
        " ALTER COLUMN block_widths SET NOT NULL;"
    )
    raw.execute(sql_text("002_jaccard.sql"))  # jaccard_estimate as revision 0002 made it (real)
