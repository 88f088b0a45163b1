-- simdb.hamming for fingerprints given as hex text, one or both, read by simdb.from_hex's rule: with
-- these overloads a quoted fingerprint is hex wherever it stands, never a decimal number (beside a
-- bigint column, PostgreSQL would otherwise read it as one).
CREATE OR REPLACE FUNCTION simdb.hamming(a text, b text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb.from_hex(a), simdb.from_hex(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a bigint, b text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(a, simdb.from_hex(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a text, b bigint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb.from_hex(a), b);
