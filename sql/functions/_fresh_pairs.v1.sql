-- The pairs of index NAME within `cutoff` that involve a row whose sketch changed after the
-- snapshot `mark` (each pair once, key_a < key_b): the index's own NAME__fresh_pairs, once the
-- index tracks changes. `cutoff` has the type of the index's (integer or double precision); the
-- score comes back as double precision, which the public functions cast to their mode's type.
CREATE OR REPLACE FUNCTION simdb_internal._fresh_pairs(index_name text, mark pg_snapshot, cutoff anyelement)
RETURNS TABLE (key_a text, key_b text, score double precision)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_attribute
        WHERE attrelid = to_regclass(format('simdb.%I', index_name)) AND attname = 'changed' AND NOT attisdropped
    ) THEN
        RAISE EXCEPTION 'simdb: index % does not track changes', quote_literal(index_name)
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'run `simdb pairs ' || index_name || ' --new` once (as the owner of simdb.'
                      || index_name || '): it starts tracking and reads every pair';
    END IF;
    RETURN QUERY EXECUTE format('SELECT p.key_a, p.key_b, p.%I::double precision FROM simdb_internal.%I($1, $2) AS p',
        CASE WHEN pg_typeof(cutoff) = 'integer'::regtype THEN 'distance' ELSE 'similarity' END,
        index_name || '__fresh_pairs') USING cutoff, mark;
END
$$;
