-- The index's mode, or an error naming it if there is no such index or it has the other mode.
CREATE OR REPLACE FUNCTION simdb_internal._checked_mode(index_name text, wanted text, instead text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    found text := (SELECT i.mode FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF found IS NULL THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    IF found <> wanted THEN
        RAISE EXCEPTION 'simdb: index % is a % index', quote_literal(index_name), found
            USING ERRCODE = 'wrong_object_type', HINT = 'use ' || instead || ' for it';
    END IF;
END
$$;
