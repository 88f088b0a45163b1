-- simdb.near for 128-bit indexes: the same search as simdb.near(text, bigint, integer), for a
-- fingerprint given as bit(128) (a literal: X'<32 hex digits>', as `simdb fingerprint --bits 128`
-- prints them).
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint bit, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb._checked_distance(index_name, max_distance);
    width integer := (SELECT i.bits FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF length(fingerprint) <> width OR width = 64 THEN
        RAISE EXCEPTION 'simdb: index % takes % fingerprints; this one is bit(%)', quote_literal(index_name),
                CASE width WHEN 64 THEN 'bigint' ELSE 'bit(' || width || ')' END, length(fingerprint)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a 64-bit index takes a bigint (simdb.from_hex), a 128-bit one a bit(128)';
    END IF;
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1, $2)', index_name || '__near')
        USING fingerprint, k;
END
$$;
