-- B-trees that carry the fingerprint (migration 0020): an index made from now on in simdb's own
-- table keys each permuted table's B-tree on (prefix, fingerprint), so that near reads every
-- candidate from the B-tree alone and visits the table only for the rows it returns. Indexes made
-- before keep B-trees on the prefix alone, and the query that suits them.

ALTER TABLE simdb._indexes ADD COLUMN covering boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN simdb._indexes.covering IS
    'simdb: the B-trees in simdb''s table are on (key expression, sketch): near reads them index-only';
