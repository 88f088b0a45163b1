-- EXPLAIN ANALYZE of index_name's near statement as its own function runs it: prepared with the
-- parameter types given and executed with `arguments` (an SQL list of literals) under the
-- settings of simdb_internal."NAME__near" (on one server a generic plan, on Citus a custom one), so that
-- the plan shown is the plan that runs, not one made for the value folded in.
CREATE OR REPLACE FUNCTION simdb_internal._explained(index_name text, parameter_types text, arguments text)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    statement text := (SELECT i.near_sql FROM simdb._indexes AS i WHERE i.name = index_name);
    settings text[] := (SELECT p.proconfig FROM pg_proc AS p
                        WHERE p.pronamespace = 'simdb_internal'::regnamespace AND p.proname = index_name || '__near');
    setting text;
    saved text[] := '{}';
    at integer;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name = 'simdb_explained') THEN
        EXECUTE 'DEALLOCATE simdb_explained';
    END IF;
    FOREACH setting IN ARRAY coalesce(settings, '{}') LOOP
        saved := saved || current_setting(split_part(setting, '=', 1));
        PERFORM set_config(split_part(setting, '=', 1), substr(setting, strpos(setting, '=') + 1), true);
    END LOOP;
    EXECUTE format('PREPARE simdb_explained(%s) AS %s', parameter_types, statement);
    RETURN QUERY EXECUTE format(
        'EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE simdb_explained(%s)', arguments);
    EXECUTE 'DEALLOCATE simdb_explained';
    FOR at IN 1 .. coalesce(cardinality(settings), 0) LOOP
        PERFORM set_config(split_part(settings[at], '=', 1), saved[at], true);
    END LOOP;
END
$$;
