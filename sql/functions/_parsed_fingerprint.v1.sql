-- A fingerprint of `bits` bits (64 or 128) given as text, by the one rule that simdb.bits spells
-- for the CLI's --fingerprint: 1 to 16 hex digits (17 to 32 for 128 bits), optionally after 0x or
-- 0X, optionally between ASCII spaces, tabs or line breaks; for 128 bits also all 128 binary
-- digits (PostgreSQL's text of a bit(128), which a driver hands back). An all-digit string is hex,
-- never a decimal number; anything else is an error naming it.
CREATE OR REPLACE FUNCTION simdb_internal._parsed_fingerprint(given text, bits integer) RETURNS bit varying
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    digits text := substring(given from '^[ \t\n\r\f\v]*(?:0[xX])?([0-9a-fA-F]+)[ \t\n\r\f\v]*$');
    bit_digits text := substring(given from '^[ \t\n\r\f\v]*([01]+)[ \t\n\r\f\v]*$');
    least integer := CASE bits WHEN 64 THEN 1 ELSE 17 END;
BEGIN
    IF bits > 64 AND length(bit_digits) = bits THEN
        RETURN bit_digits::bit varying;
    END IF;
    IF digits IS NULL OR length(digits) NOT BETWEEN least AND bits / 4 THEN
        RAISE EXCEPTION 'simdb: % is not a %-bit fingerprint in hex', quote_literal(given), bits
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('give %s to %s hex digits, optionally after 0x, as %s', least, bits / 4,
                                CASE bits WHEN 64 THEN 'simdb fingerprint and simdb.to_hex print them'
                                                       ' (a fingerprint as a number is a bigint: unquoted, or ::bigint)'
                                          ELSE 'simdb fingerprint --bits 128 prints them (or a bit(128))' END);
    END IF;
    RETURN ('x' || lpad(digits, bits / 4, '0'))::bit varying;
END
$$;
