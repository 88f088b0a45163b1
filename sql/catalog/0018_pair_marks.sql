-- Marks of `simdb pairs NAME --new` (migration 0018): for each index and consumer, the snapshot of
-- its last run; the next run reports the pairs of rows whose sketch changed after it.

CREATE TABLE simdb._pair_marks (
    index_name text NOT NULL REFERENCES simdb._indexes (name) ON DELETE CASCADE,
    consumer   text NOT NULL,
    mark       pg_snapshot NOT NULL,
    taken_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (index_name, consumer)
);
COMMENT ON TABLE simdb._pair_marks IS 'simdb: the snapshot each consumer of pairs --new last read its pairs in';

-- The trigger of an index that tracks changes: a row whose sketch an UPDATE changes gets the
-- writing transaction's id (an INSERT gets it from the column's default).
CREATE OR REPLACE FUNCTION simdb_internal._mark_changed()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.changed := pg_current_xact_id();
    RETURN NEW;
END
$$;
