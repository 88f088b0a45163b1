-- A 64-bit fingerprint given as a numeric (what psycopg sends for a Python int >= 2^63), as the
-- bigint that stores it: read by the rule of simdb_internal._unsigned_fingerprint (unsigned up to
-- 2^64 - 1, or signed), an error naming anything else. The numeric forms of simdb.hamming,
-- simdb.permute and simdb.to_hex read their fingerprints through it.
CREATE OR REPLACE FUNCTION simdb_internal._fingerprint_of(given numeric) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb_internal._unsigned_fingerprint(given, 64)::bit(64)::bigint;
