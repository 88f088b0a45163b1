-- Estimated Jaccard similarity of two MinHash signatures: the share of positions where they agree,
-- now in double precision (as Python computes it), so a threshold such as 0.8 means exactly that.
CREATE OR REPLACE FUNCTION simdb.jaccard_estimate(a bigint[], b bigint[]) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN cardinality(a) = cardinality(b) AND cardinality(a) > 0 THEN
            (SELECT count(*) FILTER (WHERE x = y) FROM unnest(a, b) AS t(x, y))::double precision
                / cardinality(a)
    END;
