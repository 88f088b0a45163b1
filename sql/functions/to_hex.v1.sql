-- 16 hex digits of the unsigned value of a fingerprint (simdb.from_hex reads them back).
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint bigint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lpad(pg_catalog.to_hex(fingerprint), 16, '0');
