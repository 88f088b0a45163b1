-- simdb.to_hex for a fingerprint given as another type than bigint, as simdb.near takes it: a
-- numeric (unsigned up to 2^64 - 1, or signed), an integer or smallint (a small number), or hex
-- text (by simdb.from_hex's rule: the 16 digits of the same value, so a quoted fingerprint is hex
-- here too, never a decimal number).
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint numeric) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.to_hex(simdb_internal._fingerprint_of(fingerprint));
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint integer) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.to_hex(fingerprint::bigint);
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint smallint) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.to_hex(fingerprint::bigint);
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.to_hex(simdb.from_hex(fingerprint));
