"""128-bit fingerprints end to end: the CLI, SQL with bit(128) literals, SQLAlchemy, the width
checks, and the migration that allows them. (near and pairs against brute force: test_contract.)"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from sqlalchemy import column, create_engine, select, table
from sqlalchemy.pool import NullPool
from support import Conn, btree_values, simdb

from simdb import ingest, query, schema
from simdb.errors import InvalidParameter
from simdb.index import lifecycle as index
from simdb.index.modes import SimhashIndex, SimhashSpec
from simdb.plan.blocks import BlockPlan
from simdb.sketch.features import Features
from simdb.sketch.simhash import NEW_INDEX_SPEC, fingerprint
from simdb.sqlalchemy import Fingerprint128, hamming, near

TEXT = " ".join(f"line{i} of a text about topic{i % 7} and more" for i in range(120))
EDITED = (
    TEXT.replace("line7 ", "LINE SEVEN ").replace("line8 ", "LINE EIGHT ").replace("line9 ", "LINE NINE ")
)


def test_cli_creates_ingests_and_queries_a_128_bit_index(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(EDITED)
    (tmp_path / "c.txt").write_text("something else entirely, with words of its own " * 20)
    code, out, _ = simdb(capsys, "create", "docs", "--bits", "128", "-k", "10", "--expected-rows", "1000")
    assert code == 0 and out.startswith(
        "created simhash index docs: 128-bit one-bit MinHash, max distance 10, "
    )
    assert simdb(capsys, "ingest", "docs", str(tmp_path))[0] == 0

    code, printed, _ = simdb(capsys, "fingerprint", "--bits", "128", "--file", str(tmp_path / "a.txt"))
    value = fingerprint(TEXT, spec=NEW_INDEX_SPEC, bits=128)
    assert (code, printed) == (0, f"{value:032x}\n")
    stored = conn.execute("SELECT fingerprint FROM simdb.docs WHERE key LIKE '%a.txt'").fetchone()
    assert stored is not None and int(stored[0], 2) == value and len(stored[0]) == 128

    a, b = str(tmp_path / "a.txt"), str(tmp_path / "b.txt")
    distance = bin(value ^ fingerprint(EDITED, spec=NEW_INDEX_SPEC, bits=128)).count("1")
    assert 0 < distance <= 10
    code, out, _ = simdb(capsys, "query", "docs", "--fingerprint", printed.strip(), "--json")
    assert code == 0 and [line for line in out.splitlines() if "c.txt" in line] == []
    assert a in out and b in out
    in_sql = conn.execute(f"SELECT key, distance FROM simdb.near('docs', X'{value:032x}')").fetchall()
    assert in_sql == [(a, 0), (b, distance)]
    assert conn.execute("SELECT key_a, key_b, distance FROM simdb.pairs('docs')").fetchall() == [
        (a, b, distance)
    ]
    assert conn.execute(
        "SELECT bit_count(fingerprint # %s) FROM simdb.docs WHERE key = %s",
        (index.get(conn, "docs").to_sql(value), b),
    ).fetchone() == (distance,)
    # untyped: a quoted literal, or a parameter a driver sends without a type, is the printed hex
    untyped = conn.execute(f"SELECT key, distance FROM simdb.near('docs', '{printed.strip()}')").fetchall()
    assert untyped == in_sql
    conn.execute("PREPARE untyped AS SELECT key, distance FROM simdb.near($1, $2, $3)")
    assert conn.execute(f"EXECUTE untyped('docs', '0x{value:032X}', 10)").fetchall() == in_sql
    # and a bit(128) as a driver reads it (its 128 binary digits), handed back
    assert conn.execute("SELECT key, distance FROM simdb.near('docs', %s)", (stored[0],)).fetchall() == in_sql

    code, _, err = simdb(capsys, "query", "docs", "--fingerprint", "1" * 33)
    assert code == 1 and "give 17 to 32 hex digits" in err
    # 16 digits are a 64-bit fingerprint, not a 128-bit one with leading zeros
    code, _, err = simdb(capsys, "query", "docs", "--fingerprint", printed.strip()[16:])
    assert code == 1 and "bad 128-bit fingerprint" in err
    code, _, err = simdb(capsys, "create", "other", "--bits", "96")
    assert code == 2 and "'96' is not one of '64', '128'" in err


def test_plain_sql_inserts_are_indexed_under_the_prefixes_simdb_computes(conn: Conn) -> None:
    made = index.create(conn, "docs", SimhashSpec(max_distance=4, bits=128, blocks=6))
    assert isinstance(made, SimhashIndex)
    value = fingerprint(TEXT, spec=NEW_INDEX_SPEC, bits=128)
    conn.execute(f"INSERT INTO simdb.docs (key, fingerprint) VALUES ('mine', X'{value:032x}')")
    cut = [table.key(value) >> table.key_shift for table in made.plan.tables]  # at most 64 bits
    assert [v & (2**64 - 1) for v in btree_values(conn, made)["mine"]] == cut
    assert [m.key for m in query.near(conn, made, value ^ 0b1011)] == ["mine"]


def test_a_fingerprint_of_the_wrong_width_is_refused_in_sql(conn: Conn) -> None:
    index.create(conn, "narrow", SimhashSpec())
    index.create(conn, "wide", SimhashSpec(bits=128))
    refused = psycopg.errors.InvalidParameterValue
    with pytest.raises(refused, match=r"'narrow' takes bigint fingerprints; this one is bit.128."):
        conn.execute("SELECT * FROM simdb.near('narrow', X'00ff'::bit(128))")
    with pytest.raises(refused, match=r"'wide' takes bit.128. fingerprints; this one is bit.64."):
        conn.execute("SELECT * FROM simdb.near('wide', X'00ff00ff00ff00ff')")
    with pytest.raises(refused, match=r"'wide' takes bit.128. fingerprints; this one is bigint"):
        conn.execute("SELECT * FROM simdb.near('wide', 5::bigint)")
    with pytest.raises(refused, match=r"'wide' takes bit.128.; this one is bit.64."):
        conn.execute("SELECT * FROM simdb_internal.wide__near(X'00ff00ff00ff00ff', 3)")
    # the untyped forms of 64-bit calls are not taken for bit strings (they are hex)
    assert conn.execute("SELECT * FROM simdb.near('narrow', 'a70392059ddfcbce')").fetchall() == []
    assert conn.execute("SELECT simdb.hamming('1', '2'), simdb.to_hex('255')").fetchone() == (
        2,
        "0000000000000255",  # (to_hex reads a quoted fingerprint as hex too, as simdb.near does)
    )
    conn.execute("PREPARE untyped_narrow AS SELECT * FROM simdb.near($1, $2, $3)")
    assert conn.execute("EXECUTE untyped_narrow('narrow', '5', 3)").fetchall() == []
    with pytest.raises(InvalidParameter, match="max distance 17 is out of range for 128-bit"):
        BlockPlan(17, 18, 128)


def test_sqlalchemy_near_and_hamming_on_128_bits(dsn: str, conn: Conn) -> None:
    made = index.create(conn, "docs", SimhashSpec(max_distance=8, bits=128), features=Features("word", 2))
    texts = {"a": TEXT, "b": TEXT + " one more line", "c": "unrelated words " * 30}
    ingest.store(conn, made, {key: made.sketch(text) for key, text in texts.items()})
    probe = made.sketch(TEXT)
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    try:
        with engine.connect() as session:
            found = session.execute(select(near("docs", probe, 8, bits=128))).all()
            width = session.execute(select(hamming(probe, probe ^ 0b111, bits=128))).scalar_one()
            docs = table("docs", column("key"), column("fingerprint", Fingerprint128()), schema="simdb")
            back = session.execute(select(docs.c.fingerprint).where(docs.c.key == "a")).scalar_one()
    finally:
        engine.dispose()
    expected = [(m.key, m.distance) for m in query.near(conn, made, probe)]
    assert [tuple(row) for row in found] == expected and expected[0] == ("a", 0)
    assert width == 3 and back == probe


def test_migrations_down_and_up_with_a_128_bit_index(empty_db: str) -> None:
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        made = index.create(conn, "wide", SimhashSpec(bits=128))
        ingest.store(conn, made, {"a": made.sketch(TEXT)})
        index.create(conn, "narrow", SimhashSpec())
    schema.downgrade(empty_db, "0003")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT array_agg(name) FROM simdb._indexes").fetchone() == (["narrow"],)
        assert conn.execute("SELECT to_regclass('simdb.wide')").fetchone() == (None,)
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert index.get(conn, "narrow").bits == 64
