-- The error for a query sketch of the wrong shape (a bit string of another length, a signature
-- of another size), raised from an index's own near statement when its check fails. It returns
-- boolean only to sit in that statement's WHERE clause; STABLE, so that the planner never
-- evaluates it ahead of the check.
CREATE OR REPLACE FUNCTION simdb_internal._refused_sketch(index_name text, wanted text, given text)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RAISE EXCEPTION 'simdb: index % takes %; this one is %', quote_literal(index_name), wanted, given
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'compute it with the index''s own settings: simdb fingerprint with the index''s '
                     'options, or index.sketch(text) in Python';
END
$$;
