-- The catalog's index modes (migration 0003): Jaccard (MinHash LSH) indexes beside SimHash ones.
-- A jaccard index keeps each row's MinHash signature (bigint[]) and one generated band-key column
-- per band, B-tree indexed; candidates that share a band are verified with simdb.jaccard_estimate.

ALTER TABLE simdb._indexes
    ADD COLUMN mode text NOT NULL DEFAULT 'simhash' CHECK (mode IN ('simhash', 'jaccard')),
    ADD COLUMN threshold double precision,
    ADD COLUMN permutations integer,
    ADD COLUMN bands integer,
    ADD COLUMN band_rows integer,
    ALTER COLUMN max_distance DROP NOT NULL,
    ALTER COLUMN blocks DROP NOT NULL,
    ALTER COLUMN block_widths DROP NOT NULL,
    ADD CONSTRAINT _indexes_mode_parameters CHECK (
        CASE mode
            WHEN 'simhash' THEN max_distance IS NOT NULL AND blocks IS NOT NULL AND block_widths IS NOT NULL
                AND threshold IS NULL AND permutations IS NULL AND bands IS NULL AND band_rows IS NULL
            ELSE max_distance IS NULL AND blocks IS NULL AND block_widths IS NULL
                AND threshold > 0 AND threshold < 1 AND permutations >= 2
                AND bands >= 1 AND band_rows >= 1 AND bands * band_rows <= permutations
        END);
COMMENT ON COLUMN simdb._indexes.mode IS
    'simhash: Hamming distance on 64-bit fingerprints; jaccard: MinHash signatures with LSH bands';
