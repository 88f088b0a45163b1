-- Loads of precomputed fingerprints under way (migration 0019): `simdb load` records here, in the
-- transaction of each chunk it copies, how many rows of which file an index holds, so that an
-- interrupted load resumes after them. The row goes when the load has built the B-trees.

CREATE TABLE simdb._loads (
    index_name text PRIMARY KEY REFERENCES simdb._indexes (name) ON DELETE CASCADE,
    source     text NOT NULL,
    identity   text NOT NULL,
    rows       bigint NOT NULL DEFAULT 0,
    started_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE simdb._loads IS 'simdb: loads of precomputed fingerprints under way (simdb load), and how far each got';
