-- Every row of a jaccard index whose estimated Jaccard similarity with a MinHash signature is at
-- least min_similarity (default: the index's threshold), most similar first. Candidates are the
-- rows sharing a band key (through the B-trees); simdb_internal.NAME__near runs the index's statement.
CREATE OR REPLACE FUNCTION simdb.similar(index_name text, signature bigint[], min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb_internal._checked_similarity(index_name, min_similarity);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb_internal.%I($1, $2)', index_name || '__near')
        USING signature, wanted;
END
$$;
