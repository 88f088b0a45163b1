-- The rows near the row stored under row_key (itself included, at distance 0), for an index of
-- either width: the row's own fingerprint goes straight to the index's near function.
CREATE OR REPLACE FUNCTION simdb.near_key(index_name text, row_key text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format(
        'SELECT n.key, n.distance FROM simdb.%I AS r CROSS JOIN LATERAL simdb.%I(r.fingerprint, $2) AS n'
        ' WHERE r.key = $1 ORDER BY n.distance, n.key', index_name, index_name || '__near')
        USING row_key, k;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
END
$$;
