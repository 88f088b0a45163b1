-- Every pair of rows of an index within max_distance bits, each pair once (key_a < key_b): the
-- batch mode, joining each permuted column with itself on its prefix (simdb_internal.NAME__pairs).
CREATE OR REPLACE FUNCTION simdb.pairs(index_name text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb_internal._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb_internal.%I($1)', index_name || '__pairs') USING k;
END
$$;
