-- simdb schema v3: Jaccard (MinHash LSH) indexes beside SimHash ones, one catalog for both.
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

-- Estimated Jaccard similarity of two MinHash signatures: the share of positions where they agree,
-- now in double precision (as Python computes it), so a threshold such as 0.8 means exactly that.
DROP FUNCTION simdb.jaccard_estimate(bigint[], bigint[]);
CREATE FUNCTION simdb.jaccard_estimate(a bigint[], b bigint[]) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN cardinality(a) = cardinality(b) AND cardinality(a) > 0 THEN
            (SELECT count(*) FILTER (WHERE x = y) FROM unnest(a, b) AS t(x, y))::double precision
                / cardinality(a)
    END;

-- The index's mode, or an error naming it if there is no such index or it has the other mode.
CREATE FUNCTION simdb._checked_mode(index_name text, wanted text, instead text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    found text := (SELECT i.mode FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    IF found IS NULL THEN
        RAISE EXCEPTION 'simdb: no index named %', quote_literal(index_name)
            USING ERRCODE = 'undefined_object',
                  HINT = 'SELECT name FROM simdb._indexes lists the indexes';
    END IF;
    IF found <> wanted THEN
        RAISE EXCEPTION 'simdb: index % is a % index', quote_literal(index_name), found
            USING ERRCODE = 'wrong_object_type', HINT = 'use ' || instead || ' for it';
    END IF;
END
$$;

-- max_distance, or the index's k when it is NULL; an unknown index, a jaccard index or a larger k
-- is an error.
CREATE OR REPLACE FUNCTION simdb._checked_distance(index_name text, max_distance integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    k_max integer;
    k integer;
BEGIN
    PERFORM simdb._checked_mode(index_name, 'simhash', 'simdb.similar, simdb.similar_key, simdb.similar_pairs');
    k_max := (SELECT i.max_distance FROM simdb._indexes AS i WHERE i.name = index_name);
    k := coalesce(max_distance, k_max);
    IF k < 0 OR k > k_max THEN
        RAISE EXCEPTION 'simdb: max distance % is outside 0..% for index %',
                k, k_max, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'an index answers exactly up to the max distance it was created with';
    END IF;
    RETURN k;
END
$$;

-- min_similarity, or the index's threshold when it is NULL; below the threshold the bands would
-- miss most pairs, so that is an error, as is a value above 1.
CREATE FUNCTION simdb._checked_similarity(index_name text, min_similarity double precision)
RETURNS double precision
LANGUAGE plpgsql STABLE AS $$
DECLARE
    lowest double precision;
    wanted double precision;
BEGIN
    PERFORM simdb._checked_mode(index_name, 'jaccard', 'simdb.near, simdb.near_key, simdb.pairs');
    lowest := (SELECT i.threshold FROM simdb._indexes AS i WHERE i.name = index_name);
    wanted := coalesce(min_similarity, lowest);
    IF wanted < lowest OR wanted > 1 THEN
        RAISE EXCEPTION 'simdb: min similarity % is outside %..1 for index %',
                wanted, lowest, quote_literal(index_name)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'a jaccard index finds pairs at or above the threshold it was created with';
    END IF;
    RETURN wanted;
END
$$;

-- Every row of a jaccard index whose estimated Jaccard similarity with a MinHash signature is at
-- least min_similarity (default: the index's threshold), most similar first. Candidates are the
-- rows sharing a band key (through the B-trees); simdb.NAME__near runs the index's statement.
CREATE FUNCTION simdb.similar(index_name text, signature bigint[], min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb._checked_similarity(index_name, min_similarity);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1, $2)', index_name || '__near')
        USING signature, wanted;
END
$$;

-- The rows similar to the row stored under row_key (itself included, at similarity 1).
CREATE FUNCTION simdb.similar_key(index_name text, row_key text, min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb._checked_similarity(index_name, min_similarity);
    value bigint[];
BEGIN
    EXECUTE format('SELECT signature FROM simdb.%I WHERE key = $1', index_name) INTO value USING row_key;
    IF value IS NULL THEN
        RAISE EXCEPTION 'simdb: index % has no key %', quote_literal(index_name), quote_literal(row_key)
            USING ERRCODE = 'no_data_found', HINT = 'check the key';
    END IF;
    RETURN QUERY SELECT * FROM simdb.similar(index_name, value, wanted);
END
$$;

-- Every pair of rows of a jaccard index with estimated similarity >= min_similarity, each pair
-- once (key_a < key_b): each band-key column joined with itself (simdb.NAME__pairs).
CREATE FUNCTION simdb.similar_pairs(index_name text, min_similarity double precision DEFAULT NULL)
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    wanted double precision := simdb._checked_similarity(index_name, min_similarity);
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM simdb.%I($1)', index_name || '__pairs') USING wanted;
END
$$;

-- The plan PostgreSQL uses for simdb.similar, as EXPLAIN ANALYZE prints it.
CREATE FUNCTION simdb.explain_similar(index_name text, signature bigint[], min_similarity double precision DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    wanted double precision := simdb._checked_similarity(index_name, min_similarity);
    statement text := (SELECT i.near_sql FROM simdb._indexes AS i WHERE i.name = index_name);
BEGIN
    RETURN QUERY EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || statement
        USING signature, wanted;
END
$$;
