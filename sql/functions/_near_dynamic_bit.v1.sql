-- simdb_internal._near_dynamic for bit(128) fingerprints (sql/functions/near_bit.v1.sql, renamed
-- by revision 0005, moved here by 0010), refusing a fingerprint of the other width.
CREATE OR REPLACE FUNCTION simdb_internal._near_dynamic(index_name text, fingerprint bit, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k integer := simdb_internal._checked_distance(index_name, max_distance);
    width integer := (SELECT i.bits FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF length(fingerprint) <> width OR width = 64 THEN
        RAISE EXCEPTION 'simdb: index % takes % fingerprints; this one is bit(%)', quote_literal(index_name),
                CASE width WHEN 64 THEN 'bigint' ELSE 'bit(' || width || ')' END, length(fingerprint)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a 64-bit index takes a bigint (simdb.from_hex), a 128-bit one a bit(128)';
    END IF;
    RETURN QUERY EXECUTE format('SELECT * FROM simdb_internal.%I($1, $2)', index_name || '__near')
        USING fingerprint, k;
END
$$;
