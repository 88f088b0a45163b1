-- simdb.near for a fingerprint given as text (a quoted literal, or a parameter a driver sends
-- untyped): hex as `simdb fingerprint` prints it, by the rule of simdb_internal._parsed_fingerprint
-- (1 to 16 digits for a 64-bit index, 17 to 32 for a 128-bit one, optionally after 0x; or the 128
-- binary digits of a bit(128)). An all-digit string is hex too, never a decimal number: a number
-- goes in as a bigint (unquoted, or ::bigint).
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    width integer := (SELECT i.bits FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF width IS NULL THEN  -- no such index: say so, whatever the text
        PERFORM simdb_internal._checked_distance(index_name, max_distance);
    ELSIF width = 128 THEN
        RETURN QUERY SELECT * FROM simdb.near(
            index_name, simdb_internal._parsed_fingerprint(fingerprint, 128)::bit(128), max_distance);
    ELSE
        RETURN QUERY SELECT * FROM simdb.near(index_name, simdb.from_hex(fingerprint), max_distance);
    END IF;
END
$$;
