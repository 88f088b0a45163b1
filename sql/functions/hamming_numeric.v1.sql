-- simdb.hamming for fingerprints given as numbers of other types than bigint, as simdb.near takes
-- them: numeric (unsigned up to 2^64 - 1, or signed: simdb_internal._fingerprint_of), integer and
-- smallint (a small number, as psycopg sends a small Python int); each also beside hex text. With
-- the bigint and text forms, any two of these types pick one form: the same type twice, or a
-- number and text (a quoted literal beside a number is hex, never a decimal number).
CREATE OR REPLACE FUNCTION simdb.hamming(a numeric, b numeric) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb_internal._fingerprint_of(a), simdb_internal._fingerprint_of(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a integer, b integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(a::bigint, b::bigint);
CREATE OR REPLACE FUNCTION simdb.hamming(a smallint, b smallint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(a::bigint, b::bigint);
CREATE OR REPLACE FUNCTION simdb.hamming(a numeric, b text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb_internal._fingerprint_of(a), simdb.from_hex(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a text, b numeric) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb.from_hex(a), simdb_internal._fingerprint_of(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a integer, b text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(a::bigint, simdb.from_hex(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a text, b integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb.from_hex(a), b::bigint);
CREATE OR REPLACE FUNCTION simdb.hamming(a smallint, b text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(a::bigint, simdb.from_hex(b));
CREATE OR REPLACE FUNCTION simdb.hamming(a text, b smallint) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN simdb.hamming(simdb.from_hex(a), b::bigint);
