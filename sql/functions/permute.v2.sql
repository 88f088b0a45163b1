-- The fingerprint with its blocks rearranged in block_order (block 0 holds the top bits). The
-- widths must be positive and add up to 64, and block_order must name each block once (0 to
-- n - 1, in any order), as simdb._indexes and simdb._tables record them: anything else is an error
-- naming it (it would otherwise drop or repeat bits of the fingerprint).
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint bigint, block_widths integer[], block_order integer[])
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    result bigint := 0;
    top    integer := 64;
    block  integer;
    width  integer;
    low    integer;
    blocks integer := coalesce(cardinality(block_widths), 0);
    first  integer := array_lower(block_widths, 1);  -- (1, unless the array says otherwise)
BEGIN
    IF blocks = 0 OR array_position(block_widths, NULL) IS NOT NULL
       OR (SELECT bool_or(w < 1) OR sum(w) <> 64 FROM unnest(block_widths) AS w) THEN
        RAISE EXCEPTION 'simdb: block widths % do not split 64 bits', block_widths
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'give positive widths that add up to 64, as simdb._indexes.block_widths holds them'
                         ' (e.g. ''{16,16,16,16}'')';
    END IF;
    IF array_position(block_order, NULL) IS NOT NULL
       OR coalesce(cardinality(block_order), 0) <> blocks
       OR (SELECT array_agg(b ORDER BY b) FROM unnest(block_order) AS b)
          IS DISTINCT FROM (SELECT array_agg(b) FROM generate_series(0, blocks - 1) AS b) THEN
        RAISE EXCEPTION 'simdb: block order % is not an order of the % blocks', block_order, blocks
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('name each block from 0 to %s once, as simdb._tables.block_order holds it'
                                ' (e.g. ''{2,3,0,1}'' for 4 blocks)', blocks - 1);
    END IF;
    FOREACH block IN ARRAY block_order LOOP
        width := block_widths[first + block];
        low := 64 - (SELECT sum(w) FROM unnest(block_widths[first:first + block]) AS w)::integer;
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
