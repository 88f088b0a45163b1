-- The fingerprint whose unsigned value the hex text spells, by the rule of
-- simdb_internal._parsed_fingerprint (the CLI's --fingerprint reads the same): 1 to 16 hex digits,
-- optionally after 0x, zero-padded on the left. Anything else is an error.
CREATE OR REPLACE FUNCTION simdb.from_hex(digits text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb_internal._parsed_fingerprint(digits, 64)::bit(64)::bigint;
