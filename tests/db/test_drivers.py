"""The SQL face takes a fingerprint as simdb prints it (hex text) and as an
unsigned number (numeric), from psycopg and asyncpg, with nothing registered on the connection."""

from __future__ import annotations

import asyncio
import random
from decimal import Decimal

import asyncpg
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from support.oracles import hamming_near

from simdb import ingest
from simdb.index import lifecycle as index
from simdb.index.modes import SimhashSpec
from simdb.sketch.bits import to_hex, to_signed

K = 3


def _fingerprints(seed: int, count: int) -> dict[str, int]:
    """Random unsigned fingerprints, about half >= 2^63, plus near copies of the first few."""
    rng = random.Random(seed)
    made = {f"r{i}": rng.getrandbits(64) for i in range(count)}
    for i in range(10):
        made[f"c{i}"] = made[f"r{i}"] ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64))
    made["small"], made["tiny"] = 70000, 5  # psycopg sends these as an integer and a smallint
    return made


@pytest.fixture
def docs(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    fingerprints = _fingerprints(29, 300)
    ingest.store(conn, index.create(conn, "docs", SimhashSpec(max_distance=K)), fingerprints)
    return fingerprints


def _probes(fingerprints: dict[str, int]) -> list[int]:
    big = next(v for v in fingerprints.values() if v >= 2**63)
    medium = next(v for v in fingerprints.values() if 2**31 <= v < 2**63)
    return [big, medium, 70000, 5]


def test_psycopg_sends_any_python_int_and_simdb_near_resolves_it(
    conn: psycopg.Connection[tuple[object, ...]], docs: dict[str, int]
) -> None:
    """A Python int >= 2^63 goes as a numeric, smaller ones as bigint, integer or smallint: each
    resolves to a form of simdb.near without a cast, text and binary, prepared or not."""
    sent = {}
    for probe in _probes(docs):
        for binary in (False, True):
            with conn.cursor(binary=binary) as cursor:
                for prepare in (False, True):
                    rows = cursor.execute(
                        "SELECT key, distance FROM simdb.near('docs', %s, 3)", (probe,), prepare=prepare
                    ).fetchall()
                    assert rows == hamming_near(docs, probe, K), (probe, binary, prepare)
        plan = conn.execute("EXPLAIN VERBOSE SELECT * FROM simdb.near('docs', %s, 3)", (probe,)).fetchall()
        sent[probe] = next(str(line) for (line,) in plan if "Function Call" in str(line))
    big, medium, small, tiny = _probes(docs)
    assert "::numeric" in sent[big] and "::bigint" in sent[medium]
    # integer and smallint go to their own forms, SQL functions inlined into the numeric one
    assert "::numeric" in sent[small] and "::numeric" in sent[tiny]
    signed = conn.execute("SELECT key FROM simdb.near('docs', %s, 0)", (to_signed(big),)).fetchall()
    assert signed == [(key,) for key, d in hamming_near(docs, big, K) if d == 0]  # the bigint form, as before
    plan = conn.execute("SELECT simdb.explain_near('docs', %s)", (big,)).fetchall()
    assert any("Scan on docs_p" in str(line) or "Scan using docs_p" in str(line) for (line,) in plan)


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, Decimal("1.5"), Decimal("NaN")])
def test_a_number_that_is_no_fingerprint_is_refused_by_name(
    conn: psycopg.Connection[tuple[object, ...]], docs: dict[str, int], value: object
) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
        conn.execute("SELECT * FROM simdb.near('docs', %s, 3)", (value,))
    assert str(refused.value).startswith(f"simdb: {value} is not a 64-bit fingerprint")
    assert refused.value.diag.message_hint is not None
    assert "from 0 to 2^64-1" in refused.value.diag.message_hint


def test_a_128_bit_index_takes_a_number_too(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    rng = random.Random(128)
    wide = {f"w{i}": rng.getrandbits(128) for i in range(50)}
    wide["w0"] |= 1 << 127  # so that it has a signed form too
    wide["near"] = wide["w0"] ^ 1
    ingest.store(conn, index.create(conn, "wide", SimhashSpec(max_distance=4, bits=128)), wide)
    for probe in (wide["w0"], wide["w0"] - 2**128):  # unsigned, and the same bits signed
        rows = conn.execute("SELECT key, distance FROM simdb.near('wide', %s::numeric)", (probe,)).fetchall()
        assert rows == [("w0", 0), ("near", 1)]


def _asyncpg_params(dsn: str) -> dict[str, object]:
    params = conninfo_to_dict(dsn)
    return {
        "host": params.get("host"),
        "port": int(str(params.get("port") or 5432)),
        "user": params.get("user"),
        "password": params.get("password"),
        "database": params.get("dbname"),
    }


def test_asyncpg_raw_sql_takes_unsigned_numbers_and_hex_text(dsn: str, docs: dict[str, int]) -> None:
    """asyncpg prepares every statement and sends what the server asks for: `$2::numeric` takes
    a Python int of any of the 64 bits, and a str goes to the text form as hex."""

    async def run() -> dict[str, list[list[tuple[str, int]]]]:
        connection = await asyncpg.connect(**_asyncpg_params(dsn))
        try:
            numeric, text = [], []
            for probe in _probes(docs):
                rows = await connection.fetch(
                    "SELECT * FROM simdb.near($1, $2::numeric, $3)", "docs", probe, K
                )
                numeric.append([(row["key"], row["distance"]) for row in rows])
                rows = await connection.fetch(
                    "SELECT * FROM simdb.near($1, $2, $3)", "docs", to_hex(probe), K
                )
                text.append([(row["key"], row["distance"]) for row in rows])
            return {"numeric": numeric, "text": text}
        finally:
            await connection.close()

    found = asyncio.run(run())
    expected = [hamming_near(docs, probe, K) for probe in _probes(docs)]
    assert found == {"numeric": expected, "text": expected}
