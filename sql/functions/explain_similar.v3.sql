-- The plan PostgreSQL runs for simdb.similar (the index's own statement, planned as its
-- function plans it), as EXPLAIN ANALYZE prints it.
CREATE OR REPLACE FUNCTION simdb.explain_similar(index_name text, signature bigint[], min_similarity double precision DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY SELECT * FROM simdb_internal._explained(
        index_name, 'bigint[], double precision',
        format('%L::bigint[], %L::double precision',
               signature, simdb_internal._checked_similarity(index_name, min_similarity)));
END
$$;
