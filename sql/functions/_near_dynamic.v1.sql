-- The hand-written simdb.near (sql/functions/near.v1.sql, renamed by revision 0005, moved here by
-- 0010): the path of simdb.near's generated dispatcher for what no branch serves, which raises the
-- usual errors. The search itself is the index's statement, run by simdb_internal.NAME__near.
CREATE OR REPLACE FUNCTION simdb_internal._near_dynamic(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb_internal._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb_internal.%I($1, $2)', index_name || '__near')
        USING fingerprint, k;
END
$$;
