-- Number of differing bits of two bit(128) fingerprints (an error if their lengths differ).
CREATE OR REPLACE FUNCTION simdb.hamming(a bit, b bit) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN bit_count(a # b)::integer;
