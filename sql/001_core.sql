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

-- The exact query simdb.near runs: one prefix-range probe per permuted column, candidates verified
-- on the permuted value inside the index (distance does not change under a permutation), so rows
-- that fail are never read; the survivors' ids are joined to the rows. The numbers in it are
-- computed bigints; the identifiers are quoted with %I.
CREATE FUNCTION simdb.near_query(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    idx      simdb._indexes;
    tbl      simdb._tables;
    k        integer;
    mask     bigint;
    permuted bigint;
    probes   text[] := '{}';
BEGIN
    SELECT * INTO idx FROM simdb._indexes AS i WHERE i.name = index_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    k := coalesce(max_distance, idx.max_distance);
    IF k < 0 OR k > idx.max_distance THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, idx.max_distance, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    FOR tbl IN SELECT * FROM simdb._tables AS t WHERE t.index_name = idx.name ORDER BY t.table_no LOOP
        permuted := simdb.permute(fingerprint, idx.block_widths, tbl.block_order);
        mask := (-1)::bigint << (64 - tbl.prefix_bits);
        probes := probes || format(
            'SELECT id FROM simdb.%1$I WHERE %2$I BETWEEN %3$s AND %4$s'
            ' AND bit_count((%2$I # %5$s::bigint)::bit(64)) <= %6$s',
            idx.name, tbl.column_name, permuted & mask, permuted | ~mask, permuted, k);
    END LOOP;
    RETURN format(
        'SELECT r.key, bit_count((r.fingerprint # %s::bigint)::bit(64))::integer AS distance'
        ' FROM simdb.%I AS r WHERE r.id IN (%s) ORDER BY 2, 1',
        fingerprint, idx.name, array_to_string(probes, ' UNION ALL '));
END
$$;

-- Every row of an index within max_distance bits of a fingerprint, nearest first: exact, through
-- the B-trees. max_distance defaults to, and may not exceed, the index's own.
CREATE FUNCTION simdb.near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE simdb.near_query(index_name, fingerprint, max_distance);
END
$$;

-- The plan PostgreSQL uses for simdb.near, as EXPLAIN (ANALYZE) prints it.
CREATE FUNCTION simdb.explain_near(index_name text, fingerprint bigint, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) '
        || simdb.near_query(index_name, fingerprint, max_distance);
END
$$;
