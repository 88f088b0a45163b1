-- The pairs of simdb.similar_pairs that involve a row added or changed after the snapshot `mark`
-- (as `simdb pairs NAME --new` keeps one); a NULL mark: every pair.
CREATE OR REPLACE FUNCTION simdb.similar_pairs_since(
    index_name text, mark pg_snapshot, min_similarity double precision DEFAULT NULL
)
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb_internal._checked_similarity(index_name, min_similarity);
BEGIN
    IF mark IS NULL THEN
        RETURN QUERY SELECT * FROM simdb.similar_pairs(index_name, wanted);
        RETURN;
    END IF;
    RETURN QUERY SELECT f.key_a, f.key_b, f.score
        FROM simdb_internal._fresh_pairs(index_name, mark, wanted) AS f;
END
$$;
