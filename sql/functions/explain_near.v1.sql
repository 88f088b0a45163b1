-- The plan PostgreSQL uses for simdb.near, as EXPLAIN ANALYZE prints it.
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
    statement text := (SELECT i.near_sql FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || statement
        USING fingerprint, k;
END
$$;
