-- Every pair of rows of a jaccard index with estimated similarity >= min_similarity, each pair
-- once (key_a < key_b): each band-key column joined with itself (simdb_internal.NAME__pairs).
CREATE OR REPLACE FUNCTION simdb.similar_pairs(index_name text, min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb_internal._checked_similarity(index_name, min_similarity);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb_internal.%I($1)', index_name || '__pairs') USING wanted;
END
$$;
