-- simdb.explain_near for a fingerprint given as a number of another type than bigint, read as
-- simdb.near's numeric form reads it (unsigned up to 2^64 - 1, or signed); the integer and
-- smallint forms keep a small number from being ambiguous between bigint and numeric.
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint numeric, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY SELECT * FROM simdb.explain_near(
        index_name, simdb_internal._unsigned_fingerprint(fingerprint, 64)::bit(64)::bigint, max_distance);
END
$$;
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint integer, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE sql VOLATILE AS $$
    SELECT * FROM simdb.explain_near(index_name, fingerprint::numeric, max_distance)
$$;
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint smallint, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE sql VOLATILE AS $$
    SELECT * FROM simdb.explain_near(index_name, fingerprint::numeric, max_distance)
$$;
