-- The fingerprint whose unsigned value 16 hex digits spell (simdb.to_hex writes them).
CREATE OR REPLACE FUNCTION simdb.from_hex(digits text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN ('x' || lpad(digits, 16, '0'))::bit(64)::bigint;
