-- simdb.permute for a fingerprint given as a number of another type than bigint, as simdb.near
-- takes it: a numeric (unsigned up to 2^64 - 1, or signed), an integer or a smallint.
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint numeric, block_widths integer[], block_order integer[])
RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.permute(simdb_internal._fingerprint_of(fingerprint), block_widths, block_order);
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint integer, block_widths integer[], block_order integer[])
RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.permute(fingerprint::bigint, block_widths, block_order);
CREATE OR REPLACE FUNCTION simdb.permute(fingerprint smallint, block_widths integer[], block_order integer[])
RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.permute(fingerprint::bigint, block_widths, block_order);
