-- simdb.near for a fingerprint of unknown type (a quoted literal, or a parameter a driver sends
-- untyped): read as the index's own type (bigint, or bit(128): 'X<32 hex digits>') and searched
-- as such. Without it, the bigint and bit forms would be ambiguous for such calls.
CREATE OR REPLACE FUNCTION simdb.near(index_name text, fingerprint text, max_distance integer DEFAULT NULL)
RETURNS TABLE (key text, distance integer)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF (SELECT i.bits FROM simdb._indexes AS i WHERE i.name = index_name) = 128 THEN
        RETURN QUERY SELECT * FROM simdb.near(index_name, fingerprint::bit(128), max_distance);
    ELSE
        RETURN QUERY SELECT * FROM simdb.near(index_name, fingerprint::bigint, max_distance);
    END IF;
END
$$;
