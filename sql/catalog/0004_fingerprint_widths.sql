-- 128-bit fingerprints (migration 0004): a simhash index stores bigint (64 bits) or bit(128)
-- fingerprints; a permuted table's prefix may then be longer than 64 bits (its stored key keeps
-- the leading 64).
ALTER TABLE simdb._indexes
    DROP CONSTRAINT _indexes_bits_check,
    ADD CONSTRAINT _indexes_bits_check CHECK (bits IN (64, 128));
ALTER TABLE simdb._tables
    DROP CONSTRAINT _tables_prefix_bits_check,
    ADD CONSTRAINT _tables_prefix_bits_check CHECK (prefix_bits BETWEEN 1 AND 128);
COMMENT ON COLUMN simdb._indexes.mode IS
    'simhash: Hamming distance on 64- or 128-bit fingerprints; jaccard: MinHash signatures with LSH bands';
