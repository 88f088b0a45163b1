-- The rows near the row stored under row_key (itself included, at distance 0).
CREATE OR REPLACE FUNCTION simdb.near_key(index_name text, row_key text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
    value bigint;
BEGIN
    EXECUTE format('SELECT fingerprint FROM simdb.%I WHERE key = $1', index_name) INTO value USING row_key;
    IF value IS NULL THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
    RETURN QUERY SELECT * FROM simdb.near(index_name, value, k);
END
$$;
