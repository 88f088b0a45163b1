-- max_distance, or the index's k when it is NULL; an unknown index, a jaccard index or a larger k
-- is an error.
CREATE OR REPLACE FUNCTION simdb_internal._checked_distance(index_name text, max_distance integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k_max integer;
    k integer;
BEGIN
    PERFORM simdb_internal._checked_mode(index_name, 'simhash', 'simdb.similar, simdb.similar_key, simdb.similar_pairs');
    k_max := (SELECT i.max_distance FROM simdb._indexes AS i WHERE i.name = index_name);
    k := coalesce(max_distance, k_max);
    IF k < 0 OR k > k_max THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, k_max, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    RETURN k;
END
$$;
