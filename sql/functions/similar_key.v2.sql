-- The rows similar to the row stored under row_key (itself included, at similarity 1).
CREATE OR REPLACE FUNCTION simdb.similar_key(index_name text, row_key text, min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb_internal._checked_similarity(index_name, min_similarity);
    value bigint[];
BEGIN
    EXECUTE format('SELECT signature FROM simdb.%I WHERE key = $1', index_name) INTO value USING row_key;
    IF value IS NULL THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
    RETURN QUERY SELECT * FROM simdb.similar(index_name, value, wanted);
END
$$;
