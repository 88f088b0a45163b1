-- simdb.permute for a fingerprint given as hex text, read by simdb.from_hex's rule.
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint text, block_widths integer[], block_order integer[])
RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.permute(simdb.from_hex(fingerprint), block_widths, block_order);
