-- min_similarity, or the index's threshold when it is NULL; below the threshold the bands would
-- miss most pairs, so that is an error, as is a value above 1.
CREATE OR REPLACE FUNCTION simdb_internal._checked_similarity(index_name text, min_similarity double precision)
RETURNS double precision
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lowest double precision;
    wanted double precision;
BEGIN
    PERFORM simdb_internal._checked_mode(index_name, 'jaccard', 'simdb.near, simdb.near_key, simdb.pairs');
    lowest := (SELECT i.threshold FROM simdb._indexes AS i WHERE i.name = index_name);
    wanted := coalesce(min_similarity, lowest);
    IF wanted < lowest OR wanted > 1 THEN
        RAISE EXCEPTION 'simdb: min similarity % is outside %..1 for index %',
                wanted, lowest, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a jaccard index finds pairs at or above the threshold it was created with';
    END IF;
    RETURN wanted;
END
$$;
