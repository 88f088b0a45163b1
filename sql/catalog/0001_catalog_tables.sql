-- simdb's catalog (migration 0001): one row per index, its permuted tables, and the user table an
-- attached index reads. The schema `simdb` exists already; the functions are in sql/functions/.
-- Fingerprints are unsigned 64-bit values stored as signed bigint with the same bits.

CREATE TABLE simdb._indexes (
    name          text PRIMARY KEY,
    bits          integer NOT NULL CHECK (bits = 64),
    max_distance  integer NOT NULL CHECK (max_distance >= 0),
    blocks        integer NOT NULL CHECK (blocks > max_distance),
    block_widths  integer[] NOT NULL,
    features      text NOT NULL,
    spec_version  integer NOT NULL,
    expected_rows bigint NOT NULL,
    near_sql      text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE simdb._indexes IS 'simdb: one row per index with the parameters it was built with';

CREATE TABLE simdb._tables (
    index_name  text NOT NULL REFERENCES simdb._indexes (name) ON DELETE CASCADE,
    table_no    integer NOT NULL,
    column_name text NOT NULL,
    block_order integer[] NOT NULL,
    prefix_bits integer NOT NULL CHECK (prefix_bits BETWEEN 1 AND 64),
    PRIMARY KEY (index_name, table_no)
);
COMMENT ON TABLE simdb._tables IS 'simdb: the permuted tables (one indexed column each) of every index';

CREATE TABLE simdb._sources (
    index_name    text PRIMARY KEY REFERENCES simdb._indexes (name) ON DELETE CASCADE,
    source_schema text NOT NULL,
    source_table  text NOT NULL,
    key_column    text NOT NULL,
    text_column   text NOT NULL,
    condition     text,
    synced_at     timestamptz
);
COMMENT ON TABLE simdb._sources IS 'simdb: the user table each attached index reads (simdb attach / sync)';
