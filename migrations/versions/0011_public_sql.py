"""The SQL face: internals in simdb_internal, public functions commented, hex text.

Revision ID: 0011
Revises: 0010
"""

from simdb.db.resources import function_sql, sql_text
from simdb.db.sabridge import migration_connection
from simdb.index import catalog, dispatch
from simdb.index import lifecycle as index

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# `\df simdb.*` lists every function in schema simdb, so the ones only simdb's own functions call
# (the checks, the dispatcher's fallback, each index's NAME__near and NAME__pairs) move to
# simdb_internal: dropped here and made again there from their files, whose bodies name the new
# places. Anyone may use that schema, as anyone may execute the functions in it: each runs with
# its caller's rights, so reading an index still takes the grants on schema simdb and its table.
MOVED = (
    "_checked_mode(text, text, text)",
    "_checked_distance(text, integer)",
    "_checked_similarity(text, double precision)",
    "_explained(text, text, text)",
    "_refused_sketch(text, text, text)",
    "_near_dynamic(text, bigint, integer)",
    "_near_dynamic(text, bit, integer)",
)
INTERNAL = (
    ("_parsed_fingerprint", 1),  # the rule of simdb.sketch.bits.parse_hex, for every text fingerprint
    ("_checked_mode", 2),
    ("_checked_distance", 3),
    ("_checked_similarity", 2),
    ("_explained", 2),
    ("_refused_sketch", 2),
    ("_near_dynamic", 1),
    ("_near_dynamic_bit", 1),
)
# The public functions whose bodies call them (new versions), from_hex and simdb.near's text
# form reading hex by one rule, and the text forms of the other functions that take a fingerprint,
# in a dependency-safe order (LANGUAGE sql bodies are checked at creation).
PUBLIC = (
    ("from_hex", 3),
    ("near_text", 2),
    ("near_key", 4),
    ("pairs", 2),
    ("explain_near", 3),
    ("explain_similar", 3),
    ("similar", 2),
    ("similar_key", 2),
    ("similar_pairs", 2),
    ("explain_near_text", 1),
    ("hamming_text", 1),
    ("permute_text", 1),
)
ADDED = (
    "explain_near(text, text, integer)",
    "hamming(text, text)",
    "hamming(bigint, text)",
    "hamming(text, bigint)",
    "permute(text, integer[], integer[])",
)
# The downgrade: the versions revision 0009 ran, in simdb again.
BEFORE = (
    ("_checked_mode", 1),
    ("_checked_distance", 2),
    ("_checked_similarity", 1),
    ("_explained", 1),
    ("_refused_sketch", 1),
    ("from_hex", 2),
    ("near_text", 1),
    ("near_key", 3),
    ("pairs", 1),
    ("explain_near", 2),
    ("explain_similar", 2),
    ("similar", 1),
    ("similar_key", 1),
    ("similar_pairs", 1),
)
# Generated code (simdb.near's branches, each index's functions and near statement) goes back with
# its references to simdb_internal made references to simdb, as it was generated before.
TO_SIMDB = (r'(^|[^[:alnum:]_"])"?simdb_internal"?\.', r"\1simdb.")


def upgrade() -> None:
    raw = migration_connection()
    raw.execute("GRANT USAGE ON SCHEMA simdb_internal TO PUBLIC")
    for signature in MOVED:
        raw.execute(f"DROP FUNCTION simdb.{signature}")
    for name, version in INTERNAL + PUBLIC:
        raw.execute(function_sql(name, version))
    raw.execute(sql_text("comments/public_functions.v1.sql"))
    for name in catalog.index_names(raw):
        index.remake_functions(raw, index.get(raw, name))
    dispatch.regenerate(raw)


def downgrade() -> None:
    raw = migration_connection()
    for signature in ADDED:
        raw.execute(f"DROP FUNCTION simdb.{signature}")
    for name, version in BEFORE:
        raw.execute(function_sql(name, version))
    generated = raw.execute(
        "SELECT regexp_replace(pg_get_functiondef(p.oid), %s, %s, 'g') FROM pg_proc AS p"
        " WHERE (p.pronamespace = 'simdb_internal'::regnamespace"
        "        AND (p.proname ~ '__(near|pairs)$' OR p.proname = '_near_dynamic'))"
        " OR (p.pronamespace = 'simdb'::regnamespace AND p.proname = 'near'"
        "     AND p.proargtypes[1] IN ('bigint'::regtype, 'bit'::regtype))",
        TO_SIMDB,
    ).fetchall()
    for (definition,) in generated:
        raw.execute(definition)
    raw.execute("UPDATE simdb._indexes SET near_sql = regexp_replace(near_sql, %s, %s, 'g')", TO_SIMDB)
    stale = raw.execute(
        "SELECT format('DROP FUNCTION %s', p.oid::regprocedure) FROM pg_proc AS p"
        " WHERE p.pronamespace = 'simdb_internal'::regnamespace"
        " UNION ALL SELECT format('COMMENT ON FUNCTION %s IS NULL', p.oid::regprocedure) FROM pg_proc AS p"
        " WHERE p.pronamespace = 'simdb'::regnamespace"
    ).fetchall()
    for (statement,) in stale:
        raw.execute(statement)
    raw.execute("REVOKE USAGE ON SCHEMA simdb_internal FROM PUBLIC")
