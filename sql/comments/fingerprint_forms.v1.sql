-- What `\df+ simdb.*` says of the forms of simdb.hamming, simdb.to_hex and simdb.permute that take
-- a fingerprint as a numeric, an integer, a smallint or (to_hex) hex text, as simdb.near does.
COMMENT ON FUNCTION simdb.hamming(numeric, numeric) IS
'simdb.hamming for two fingerprints given as numerics: unsigned (0 to 2^64-1, as simdb.fingerprint returns them and psycopg sends a Python int >= 2^63) or signed (as a bigint stores them); a bigint beside a numeric is read so too. Arguments: a, b. Example: SELECT simdb.hamming(12034623182085278670::numeric, 12034623182085278671::numeric)  -- 1';
COMMENT ON FUNCTION simdb.hamming(integer, integer) IS
'simdb.hamming for two fingerprints given as integers (so that small numbers are not ambiguous between bigint and numeric). Arguments: a, b. Example: SELECT simdb.hamming(255, 0)  -- 8';
COMMENT ON FUNCTION simdb.hamming(smallint, smallint) IS
'simdb.hamming for two fingerprints given as smallints (psycopg sends a small Python int as one). Arguments: a, b. Example: SELECT simdb.hamming(7::smallint, 0::smallint)  -- 3';
COMMENT ON FUNCTION simdb.hamming(numeric, text) IS
'simdb.hamming for a fingerprint given as a numeric (unsigned or signed) and one given as hex text (the rule of simdb.from_hex). Arguments: a (numeric), b (text). Example: SELECT simdb.hamming(12034623182085278670::numeric, ''a70392059ddfcbcf'')  -- 1';
COMMENT ON FUNCTION simdb.hamming(text, numeric) IS
'simdb.hamming for a fingerprint given as hex text (the rule of simdb.from_hex) and one given as a numeric (unsigned or signed). Arguments: a (text), b (numeric). Example: SELECT simdb.hamming(''a70392059ddfcbce'', 12034623182085278671::numeric)  -- 1';
COMMENT ON FUNCTION simdb.hamming(integer, text) IS
'simdb.hamming for a fingerprint given as an integer and one given as hex text (the rule of simdb.from_hex). Arguments: a (integer), b (text). Example: SELECT simdb.hamming(255, ''ff'')  -- 0';
COMMENT ON FUNCTION simdb.hamming(text, integer) IS
'simdb.hamming for a fingerprint given as hex text (the rule of simdb.from_hex) and one given as an integer. Arguments: a (text), b (integer). Example: SELECT simdb.hamming(''ff'', 255)  -- 0';
COMMENT ON FUNCTION simdb.hamming(smallint, text) IS
'simdb.hamming for a fingerprint given as a smallint and one given as hex text (the rule of simdb.from_hex). Arguments: a (smallint), b (text). Example: SELECT simdb.hamming(7::smallint, ''f'')  -- 1';
COMMENT ON FUNCTION simdb.hamming(text, smallint) IS
'simdb.hamming for a fingerprint given as hex text (the rule of simdb.from_hex) and one given as a smallint. Arguments: a (text), b (smallint). Example: SELECT simdb.hamming(''f'', 7::smallint)  -- 1';
COMMENT ON FUNCTION simdb.to_hex(numeric) IS
'simdb.to_hex for a fingerprint given as a numeric: unsigned (0 to 2^64-1, as simdb.fingerprint returns it) or signed (as a bigint stores it). Argument: fingerprint (numeric). Example: SELECT simdb.to_hex(12034623182085278670::numeric)  -- a70392059ddfcbce';
COMMENT ON FUNCTION simdb.to_hex(integer) IS
'simdb.to_hex for a fingerprint given as an integer (signed, as a bigint holds it). Argument: fingerprint (integer). Example: SELECT simdb.to_hex(255)  -- 00000000000000ff';
COMMENT ON FUNCTION simdb.to_hex(smallint) IS
'simdb.to_hex for a fingerprint given as a smallint (signed, as a bigint holds it). Argument: fingerprint (smallint). Example: SELECT simdb.to_hex(-1::smallint)  -- ffffffffffffffff';
COMMENT ON FUNCTION simdb.to_hex(text) IS
'simdb.to_hex for a fingerprint given as hex text (the rule of simdb.from_hex: a quoted fingerprint is hex, never a decimal number): its 16 digits. Argument: fingerprint (text). Example: SELECT simdb.to_hex(''0xFF'')  -- 00000000000000ff';
COMMENT ON FUNCTION simdb.permute(numeric, integer[], integer[]) IS
'simdb.permute for a fingerprint given as a numeric: unsigned (0 to 2^64-1) or signed. Arguments: fingerprint (numeric), block_widths, block_order. Example: SELECT simdb.permute(12034623182085278670::numeric, ''{16,16,16,16}'', ''{2,3,0,1}'')';
COMMENT ON FUNCTION simdb.permute(integer, integer[], integer[]) IS
'simdb.permute for a fingerprint given as an integer (signed, as a bigint holds it). Arguments: fingerprint (integer), block_widths, block_order. Example: SELECT simdb.permute(7, ''{32,32}'', ''{1,0}'')  -- 30064771072';
COMMENT ON FUNCTION simdb.permute(smallint, integer[], integer[]) IS
'simdb.permute for a fingerprint given as a smallint (signed, as a bigint holds it). Arguments: fingerprint (smallint), block_widths, block_order. Example: SELECT simdb.permute(7::smallint, ''{32,32}'', ''{1,0}'')  -- 30064771072';
COMMENT ON FUNCTION simdb.permute(bigint, integer[], integer[]) IS
'A 64-bit fingerprint with its blocks rearranged in block_order (block 0 holds the top bits): one permuted table''s value, whose leading bits are its prefix. Arguments: fingerprint, block_widths (positive, adding up to 64), block_order (each block from 0 once), as simdb._indexes and simdb._tables record them; other widths or orders are refused. Example: SELECT simdb.permute(-1, ''{16,16,16,16}'', ''{2,3,0,1}'')';
