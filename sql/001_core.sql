-- simdb schema v1: the catalog of indexes and the SQL face (hamming, permute, near).
-- Applied by the Alembic migration 0001 (migrations/versions); the schema `simdb` exists already.
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

-- Number of differing bits of two fingerprints.
CREATE FUNCTION simdb.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN bit_count((a # b)::bit(64))::integer;

-- 16 hex digits of the unsigned value, and back.
CREATE FUNCTION simdb.to_hex(fingerprint bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lpad(pg_catalog.to_hex(fingerprint), 16, '0');

CREATE FUNCTION simdb.from_hex(digits text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ('x' || lpad(digits, 16, '0'))::bit(64)::bigint;

-- The fingerprint with its blocks rearranged in block_order (block 0 holds the top bits).
CREATE FUNCTION simdb.permute(fingerprint bigint, block_widths integer[], block_order integer[])
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    result bigint := 0;
    top    integer := 64;
    block  integer;
    width  integer;
    low    integer;
BEGIN
    FOREACH block IN ARRAY block_order LOOP
        width := block_widths[block + 1];
        low := 64 - (SELECT sum(w) FROM unnest(block_widths[1:block + 1]) AS w)::integer;
        top := top - width;
        IF width >= 64 THEN
            result := fingerprint;
        ELSE
            result := result | (((fingerprint >> low) & ~((-1)::bigint << width)) << top);
        END IF;
    END LOOP;
    RETURN result;
END
$$;

-- Every row of an index within max_distance bits of a fingerprint, nearest first: exact, through
-- the B-trees. max_distance defaults to, and may not exceed, the index's own. The query itself is
-- the index's static statement (simdb._indexes.near_sql), run by its function simdb.NAME__near.
CREATE FUNCTION simdb.near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1, $2)', index_name || '__near')
        USING fingerprint, k;
END
$$;

-- The rows near the row stored under row_key (itself included, at distance 0).
CREATE FUNCTION simdb.near_key(index_name text, row_key text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
    value bigint;
BEGIN
    EXECUTE format('SELECT fingerprint FROM simdb.%I WHERE key = $1', index_name) INTO value USING row_key;
    IF value IS NULL THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
    RETURN QUERY SELECT * FROM simdb.near(index_name, value, k);
END
$$;

-- Every pair of rows of an index within max_distance bits, each pair once (key_a < key_b): the
-- batch mode, joining each permuted column with itself on its prefix (simdb.NAME__pairs).
CREATE FUNCTION simdb.pairs(index_name text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1)', index_name || '__pairs') USING k;
END
$$;

-- The plan PostgreSQL uses for simdb.near, as EXPLAIN ANALYZE prints it.
CREATE FUNCTION simdb.explain_near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
    statement text := (SELECT i.near_sql FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || statement
        USING fingerprint, k;
END
$$;

-- max_distance, or the index's k when it is NULL; an unknown index or a larger k is an error.
CREATE FUNCTION simdb._checked_distance(index_name text, max_distance integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k_max integer := (SELECT i.max_distance FROM simdb._indexes AS i WHERE i.name = index_name);
    k integer := coalesce(max_distance, k_max);
BEGIN
    IF k_max IS NULL THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    IF k < 0 OR k > k_max THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, k_max, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    RETURN k;
END
$$;
