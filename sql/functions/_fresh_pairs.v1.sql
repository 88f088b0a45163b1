-- The pairs of index NAME within `cutoff` that involve a row whose sketch changed after the
-- snapshot `mark` (each pair once, key_a < key_b): each such row's near function, run for it.
-- `cutoff` has the type of the near function's (integer or double precision); the score comes
-- back as double precision, which the public functions cast to their mode's type.
CREATE OR REPLACE FUNCTION simdb_internal._fresh_pairs(
    index_name text, mark pg_snapshot, cutoff anyelement, sketch text, score text
)
RETURNS TABLE (key_a text, key_b text, score_value double precision)
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
    RETURN QUERY EXECUTE format(
        'SELECT DISTINCT least(f.key, m.key), greatest(f.key, m.key), m.%3$I::double precision'
        ' FROM simdb.%1$I AS f CROSS JOIN LATERAL simdb_internal.%2$I(f.%4$I, $1) AS m'
        ' WHERE m.key <> f.key AND f.changed >= pg_snapshot_xmin($2)'
        ' AND NOT pg_visible_in_snapshot(f.changed, $2) ORDER BY 1, 2',
        index_name, index_name || '__near', score, sketch
    ) USING cutoff, mark;
END
$$;
