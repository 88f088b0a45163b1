-- Number of differing bits of two fingerprints.
CREATE OR REPLACE FUNCTION simdb.hamming(a bigint, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN bit_count((a # b)::bit(64))::integer;
