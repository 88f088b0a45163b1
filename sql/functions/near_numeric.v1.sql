-- simdb.near for a fingerprint given as a number of another type than bigint: a numeric (what
-- psycopg sends for a Python int >= 2^63, and what `$1::numeric` makes of asyncpg's), read by the
-- rule of simdb_internal._unsigned_fingerprint (unsigned up to 2^bits - 1, or signed); for a
-- 128-bit index, the number's 128 bits. The integer and smallint forms exist so that a small
-- number (psycopg sends a small Python int as one) is not ambiguous between bigint and numeric.
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint numeric, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    width integer := (SELECT i.bits FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF width IS NULL THEN  -- no such index: say so, whatever the number
        PERFORM simdb_internal._checked_distance(index_name, max_distance);
    ELSIF width = 128 THEN
        RETURN QUERY SELECT * FROM simdb.near(
            index_name, simdb_internal._unsigned_fingerprint(fingerprint, 128)::bit(128), max_distance);
    ELSE
        RETURN QUERY SELECT * FROM simdb.near(
            index_name, simdb_internal._unsigned_fingerprint(fingerprint, 64)::bit(64)::bigint, max_distance);
    END IF;
END
$$;
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint integer, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE sql STABLE AS $$
    SELECT * FROM simdb.near(index_name, fingerprint::numeric, max_distance)
$$;
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint smallint, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE sql STABLE AS $$
    SELECT * FROM simdb.near(index_name, fingerprint::numeric, max_distance)
$$;
