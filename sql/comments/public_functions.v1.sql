-- What `\df+ simdb.*` and `\sf` show for each public function: what it does, its arguments, an
-- example. (tests/test_sql.py checks that every function in schema simdb has one.)
COMMENT ON FUNCTION simdb.near(text, bigint, integer) IS
'Every row of a simhash index within max_distance bits of a 64-bit fingerprint, nearest first: exact, through the B-trees. Arguments: index_name; fingerprint (a bigint, or the hex text simdb fingerprint prints); max_distance (default and largest: the index''s own). Returns (key, distance). Example: SELECT key, distance FROM simdb.near(''docs'', ''a70392059ddfcbce'', 3)';
COMMENT ON FUNCTION simdb.near(text, bit, integer) IS
'simdb.near for a 128-bit index: every row within max_distance bits of a bit(128) fingerprint, nearest first. Arguments: index_name; fingerprint (bit(128), or the hex text simdb fingerprint --bits 128 prints); max_distance (default and largest: the index''s own). Example: SELECT * FROM simdb.near(''wide'', X''efceb58a6ba35f8aa70392059ddfcbce'')';
COMMENT ON FUNCTION simdb.near(text, text, integer) IS
'simdb.near for a fingerprint given as text: hex as simdb fingerprint prints it (1 to 16 digits, 17 to 32 for a 128-bit index, optionally after 0x), never a decimal number; a number goes in as a bigint. Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT * FROM simdb.near(''docs'', ''a70392059ddfcbce'')';
COMMENT ON FUNCTION simdb.near_key(text, text, integer) IS
'The rows of a simhash index within max_distance bits of the row stored under a key (itself included, at 0), nearest first. Arguments: index_name, row_key, max_distance (default: the index''s). Example: SELECT * FROM simdb.near_key(''docs'', ''notes/a.txt'', 2)';
COMMENT ON FUNCTION simdb.pairs(text, integer) IS
'Every pair of rows of a simhash index within max_distance bits, each pair once (key_a < key_b). Arguments: index_name, max_distance (default: the index''s). Returns (key_a, key_b, distance). Example: SELECT * FROM simdb.pairs(''docs'', 2)';
COMMENT ON FUNCTION simdb.explain_near(text, bigint, integer) IS
'The plan simdb.near runs for a fingerprint (its generic plan on one server), as EXPLAIN ANALYZE prints it. Arguments: index_name, fingerprint (bigint), max_distance (default: the index''s). Example: SELECT simdb.explain_near(''docs'', -6412120891624272946)';
COMMENT ON FUNCTION simdb.explain_near(text, text, integer) IS
'simdb.explain_near for a fingerprint given as hex text (the rule of simdb.from_hex). Arguments: index_name, fingerprint, max_distance (default: the index''s). Example: SELECT simdb.explain_near(''docs'', ''a70392059ddfcbce'')';
COMMENT ON FUNCTION simdb.similar(text, bigint[], double precision) IS
'Every row of a jaccard index whose estimated Jaccard similarity with a MinHash signature is at least min_similarity, most similar first. Arguments: index_name; signature (bigint[], as simdb fingerprint --mode jaccard prints it with the index''s options); min_similarity (default and lowest: the index''s threshold). Returns (key, similarity). Example: SELECT * FROM simdb.similar(''pages'', (SELECT signature FROM simdb.pages LIMIT 1), 0.9)';
COMMENT ON FUNCTION simdb.similar_key(text, text, double precision) IS
'The rows of a jaccard index similar to the row stored under a key (itself included, at 1), most similar first. Arguments: index_name, row_key, min_similarity (default: the index''s threshold). Example: SELECT * FROM simdb.similar_key(''pages'', ''https://example.com/a'', 0.9)';
COMMENT ON FUNCTION simdb.similar_pairs(text, double precision) IS
'Every pair of rows of a jaccard index with estimated similarity at least min_similarity, each pair once (key_a < key_b). Arguments: index_name, min_similarity (default: the index''s threshold). Returns (key_a, key_b, similarity). Example: SELECT * FROM simdb.similar_pairs(''pages'')';
COMMENT ON FUNCTION simdb.explain_similar(text, bigint[], double precision) IS
'The plan simdb.similar runs for a signature, as EXPLAIN ANALYZE prints it. Arguments: index_name, signature (bigint[]), min_similarity (default: the index''s threshold). Example: SELECT simdb.explain_similar(''pages'', (SELECT signature FROM simdb.pages LIMIT 1))';
COMMENT ON FUNCTION simdb.hamming(bigint, bigint) IS
'The number of bits in which two 64-bit fingerprints differ (bit_count of their XOR). Arguments: a, b (bigint). Example: SELECT simdb.hamming(-1, 0)  -- 64';
COMMENT ON FUNCTION simdb.hamming(text, text) IS
'simdb.hamming for two fingerprints given as hex text (the rule of simdb.from_hex), never read as decimal numbers. Arguments: a, b (text). Example: SELECT simdb.hamming(''a70392059ddfcbce'', ''a70392059ddfcbcf'')  -- 1';
COMMENT ON FUNCTION simdb.hamming(bigint, text) IS
'simdb.hamming for a bigint fingerprint and one given as hex text (the rule of simdb.from_hex), so that a quoted fingerprint beside a bigint column is hex, never a decimal number. Arguments: a (bigint), b (text). Example: SELECT key FROM simdb.docs WHERE simdb.hamming(fingerprint, ''a70392059ddfcbce'') <= 3';
COMMENT ON FUNCTION simdb.hamming(text, bigint) IS
'simdb.hamming for a fingerprint given as hex text (the rule of simdb.from_hex) and a bigint one. Arguments: a (text), b (bigint). Example: SELECT simdb.hamming(''ff'', 0)  -- 8';
COMMENT ON FUNCTION simdb.to_hex(bigint) IS
'The 16 hex digits of a 64-bit fingerprint''s unsigned value, as simdb fingerprint prints it (simdb.from_hex reads them back). Argument: fingerprint (bigint). Example: SELECT simdb.to_hex(-6412120891624272946)  -- a70392059ddfcbce';
COMMENT ON FUNCTION simdb.from_hex(text) IS
'The 64-bit fingerprint (bigint) whose unsigned value hex text spells: 1 to 16 hex digits, optionally after 0x, zero-padded on the left; the same rule as the CLI''s --fingerprint. An all-digit string is hex too. Argument: digits. Example: SELECT simdb.from_hex(''a70392059ddfcbce'')  -- -6412120891624272946';
COMMENT ON FUNCTION simdb.permute(bigint, integer[], integer[]) IS
'A 64-bit fingerprint with its blocks rearranged in block_order (block 0 holds the top bits): one permuted table''s value, whose leading bits are its prefix. Arguments: fingerprint, block_widths, block_order (as simdb._indexes and simdb._tables record them). Example: SELECT simdb.permute(-1, ''{16,16,16,16}'', ''{2,3,0,1}'')';
COMMENT ON FUNCTION simdb.permute(text, integer[], integer[]) IS
'simdb.permute for a fingerprint given as hex text (the rule of simdb.from_hex). Arguments: fingerprint (text), block_widths, block_order. Example: SELECT simdb.permute(''a70392059ddfcbce'', ''{16,16,16,16}'', ''{2,3,0,1}'')';
COMMENT ON FUNCTION simdb.jaccard_estimate(bigint[], bigint[]) IS
'The estimated Jaccard similarity of two MinHash signatures: the share of positions where they agree (NULL if their lengths differ). Arguments: a, b (bigint[]). Example: SELECT simdb.jaccard_estimate(''{1,2,3,4}'', ''{1,2,3,5}'')  -- 0.75';
