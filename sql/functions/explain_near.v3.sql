-- The plan PostgreSQL runs for simdb.near (the index's own statement, planned as its function
-- plans it), as EXPLAIN ANALYZE prints it.
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY SELECT * FROM simdb_internal._explained(
        index_name, 'bigint, integer',
        format('%L::bigint, %L::integer', fingerprint, simdb_internal._checked_distance(index_name, max_distance)));
END
$$;
