-- max_distance, or the index's k when it is NULL; an unknown index or a larger k is an error.
CREATE OR REPLACE FUNCTION simdb._checked_distance(index_name text, max_distance integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k_max integer := (SELECT i.max_distance FROM simdb._indexes AS i WHERE i.name = index_name);
    k integer := coalesce(max_distance, k_max);
BEGIN
    IF k_max IS NULL THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    IF k < 0 OR k > k_max THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, k_max, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    RETURN k;
END
$$;
