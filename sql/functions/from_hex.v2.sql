-- The fingerprint whose unsigned value 1 to 16 hex digits spell (simdb.to_hex writes 16; fewer
-- are zero-padded on the left, as the CLI's --fingerprint pads them). Anything else is an error,
-- never a silently shortened or empty value.
CREATE OR REPLACE FUNCTION simdb.from_hex(digits text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF digits !~ '^[0-9a-fA-F]{1,16}$' THEN
        RAISE EXCEPTION 'simdb: % is not a 64-bit fingerprint in hex', quote_literal(digits)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'give 1 to 16 hex digits, as simdb.to_hex and simdb fingerprint print them';
    END IF;
    RETURN ('x' || lpad(digits, 16, '0'))::bit(64)::bigint;
END
$$;
