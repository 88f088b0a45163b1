-- Estimated Jaccard similarity of two MinHash signatures: the share of positions where they agree.
-- Signatures hold unsigned 64-bit values stored as bigint with the same bits; NULL if the lengths differ.
CREATE OR REPLACE FUNCTION simdb.jaccard_estimate(a bigint[], b bigint[]) RETURNS real
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN cardinality(a) = cardinality(b) AND cardinality(a) > 0 THEN
            (SELECT count(*) FILTER (WHERE x = y) FROM unnest(a, b) AS t(x, y))::real / cardinality(a)
    END;
