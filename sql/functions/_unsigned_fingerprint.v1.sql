-- A fingerprint of `bits` bits (64 or 128) given as a number, as a driver sends a Python int that
-- a bigint cannot hold (numeric): unsigned from 0 to 2^bits - 1, as simdb.fingerprint returns it,
-- or signed from -2^(bits-1), as a bigint stores it. Anything else (a fraction, a number out of
-- that range, NaN or infinity) is an error naming it.
CREATE OR REPLACE FUNCTION simdb_internal._unsigned_fingerprint(given numeric, bits integer) RETURNS bit varying
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    span numeric := power(2::numeric, bits);
    word_span numeric := power(2::numeric, 64);
    value numeric := given;
    word numeric;
    result bit varying := B'';
BEGIN
    IF NOT (given >= -span / 2 AND given < span) OR given <> trunc(given) THEN
        RAISE EXCEPTION 'simdb: % is not a %-bit fingerprint', given, bits
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = format('give an integer from 0 to 2^%s-1 (unsigned, as simdb.fingerprint returns it)'
                                ' or from -2^%s (signed, as a bigint stores it), or hex text', bits, bits - 1);
    END IF;
    IF value < 0 THEN
        value := value + span;
    END IF;
    FOR i IN REVERSE bits / 64 - 1 .. 0 LOOP  -- 64-bit words, most significant first
        word := mod(div(value, power(2::numeric, 64 * i)), word_span);  -- (div: exact, where / rounds)
        IF word >= word_span / 2 THEN
            word := word - word_span;
        END IF;
        result := result || word::bigint::bit(64);
    END LOOP;
    RETURN result;
END
$$;
