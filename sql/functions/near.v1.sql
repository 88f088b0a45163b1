-- Every row of an index within max_distance bits of a fingerprint, nearest first: exact, through
-- the B-trees. max_distance defaults to, and may not exceed, the index's own. The query itself is
-- the index's static statement (simdb._indexes.near_sql), run by its function simdb.NAME__near.
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1, $2)', index_name || '__near')
        USING fingerprint, k;
END
$$;
