-- The fingerprint with its blocks rearranged in block_order (block 0 holds the top bits).
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint bigint, block_widths integer[], block_order integer[])
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    result bigint := 0;
    top    integer := 64;
    block  integer;
    width  integer;
    low    integer;
BEGIN
    FOREACH block IN ARRAY block_order LOOP
        width := block_widths[block + 1];
        low := 64 - (SELECT sum(w) FROM unnest(block_widths[1:block + 1]) AS w)::integer;
        top := top - width;
        IF width >= 64 THEN
            result := fingerprint;
        ELSE
            result := result | (((fingerprint >> low) & ~((-1)::bigint << width)) << top);
        END IF;
    END LOOP;
    RETURN result;
END
$$;
