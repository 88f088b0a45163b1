-- The pairs of simdb.pairs that involve a row added or changed after the snapshot `mark` (as
-- `simdb pairs NAME --new` keeps one); a NULL mark: every pair.
CREATE OR REPLACE FUNCTION simdb.pairs_since(index_name text, mark pg_snapshot, max_distance integer DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb_internal._checked_distance(index_name, max_distance);
BEGIN
    IF mark IS NULL THEN
        RETURN QUERY SELECT * FROM simdb.pairs(index_name, k);
        RETURN;
    END IF;
    RETURN QUERY SELECT f.key_a, f.key_b, f.score::integer
        FROM simdb_internal._fresh_pairs(index_name, mark, k) AS f;
END
$$;
