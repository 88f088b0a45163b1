-- What `\df+ simdb.*` says of the forms of simdb.near and simdb.explain_near that take a number.
COMMENT ON FUNCTION simdb.near(text, numeric, integer) IS
'simdb.near for a fingerprint given as a numeric: unsigned (0 to 2^64-1, as simdb.fingerprint returns it and psycopg sends a Python int >= 2^63; 0 to 2^128-1 for a 128-bit index) or signed (as a bigint stores it). Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT * FROM simdb.near(''docs'', 12034623182085278670::numeric, 3)';
COMMENT ON FUNCTION simdb.near(text, integer, integer) IS
'simdb.near for a fingerprint given as an integer (so that a small number is not ambiguous between bigint and numeric). Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT count(*) FROM simdb.near(''docs'', 1234567, 3)';
COMMENT ON FUNCTION simdb.near(text, smallint, integer) IS
'simdb.near for a fingerprint given as a smallint (psycopg sends a small Python int as one). Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT count(*) FROM simdb.near(''docs'', 7::smallint, 3)';
COMMENT ON FUNCTION simdb.explain_near(text, numeric, integer) IS
'simdb.explain_near for a fingerprint given as a numeric, unsigned or signed (as simdb.near''s numeric form reads it). Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT simdb.explain_near(''docs'', 12034623182085278670::numeric)';
COMMENT ON FUNCTION simdb.explain_near(text, integer, integer) IS
'simdb.explain_near for a fingerprint given as an integer. Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT simdb.explain_near(''docs'', 1234567)';
COMMENT ON FUNCTION simdb.explain_near(text, smallint, integer) IS
'simdb.explain_near for a fingerprint given as a smallint. Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT simdb.explain_near(''docs'', 7::smallint)';
