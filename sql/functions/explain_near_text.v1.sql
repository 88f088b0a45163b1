-- simdb.explain_near for a fingerprint given as hex text, read by simdb.from_hex's rule (as
-- simdb.near's text form reads it), never as a decimal number.
CREATE OR REPLACE FUNCTION simdb.explain_near(index_name text, fingerprint text, max_distance integer DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY SELECT * FROM simdb.explain_near(index_name, simdb.from_hex(fingerprint), max_distance);
END
$$;
