-- The plan PostgreSQL uses for simdb.similar, as EXPLAIN ANALYZE prints it.
CREATE OR REPLACE FUNCTION simdb.explain_similar(index_name text, signature bigint[], min_similarity double precision DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    wanted double precision := simdb._checked_similarity(index_name, min_similarity);
    statement text := (SELECT i.near_sql FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || statement
        USING signature, wanted;
END
$$;
