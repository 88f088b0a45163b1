-- The hex digits of a fingerprint stored as bit(128) (32 digits; 16 per 64 bits).
CREATE OR REPLACE FUNCTION simdb.to_hex(fingerprint bit) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (SELECT string_agg(lpad(to_hex(substring(fingerprint FROM i FOR 64)::bigint), 16, '0'), '' ORDER BY i)
            FROM generate_series(1, length(fingerprint), 64) AS i);
