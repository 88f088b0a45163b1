-- The rows near the row stored under row_key (itself included, at distance 0), for an index of
-- either width. The row's fingerprint is read first, then given to the index's near function:
-- in two statements, so that on Citus the lookup by key goes to the key's shard and the probe
-- still runs from the coordinator (one statement would be sent whole to that shard).
CREATE OR REPLACE FUNCTION simdb.near_key(index_name text, row_key text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb_internal._checked_distance(index_name, max_distance);
    value text;  -- the fingerprint as text: bigint or bit(128), by the index's width
    kind text := (SELECT CASE i.bits WHEN 64 THEN 'bigint' ELSE format('bit(%s)', i.bits) END
                  FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    EXECUTE format('SELECT fingerprint::text FROM simdb.%I WHERE key = $1', index_name) INTO value USING row_key;
    IF value IS NULL THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT n.key, n.distance FROM simdb_internal.%I($1::%s, $2) AS n ORDER BY n.distance, n.key',
        index_name || '__near', kind)
        USING value, k;
END
$$;
