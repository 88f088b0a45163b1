"""Indexes over an application's table on a Citus coordinator, each combination either working,
against brute force over the sketches of the rows' text, or refused with one line naming why:

| the application's table | in its column (a) | and simdb fills it (b) | side, triggers (c) | side, no triggers (d) |
| hash-distributed        | works             | works                  | works              | works                 |
| reference / Citus local | refused           | refused                | refused            | works                 |
| local on the coordinator| works             | works                  | works              | works                 |
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import BigInteger, Column, MetaData, Table, create_engine, select
from sqlalchemy.pool import NullPool
from support import Conn, simdb
from support.oracles import components, hamming_pairs

from simdb import duplicates, query
from simdb.errors import InvalidParameter
from simdb.follow import app_column, keep
from simdb.follow.queue import DrainReport
from simdb.index import lifecycle as index
from simdb.index.modes import Index
from simdb.sketch.bits import to_signed
from simdb.sqlalchemy import Fingerprint

pytestmark = pytest.mark.citus

TABLE = "public.app_docs"
# how each kind of table is made a Citus table (a local one is left as it is)
KINDS = {
    "distributed": "SELECT create_distributed_table('app_docs', 'id', shard_count => 4)",
    "reference": "SELECT create_reference_table('app_docs')",
    "citus_local": "SELECT citus_add_local_table_to_metadata('app_docs')",
    "local": None,
}
WORKS_IN_COLUMN = ("distributed", "local")  # the kinds an index in the table's column works on
SIDE_TABLE = ["attach", "docs", "--table", TABLE, "--key-column", "id", "--text-column", "body"]
NOT_HASH = r"is a Citus table that is not hash-distributed \(a reference table"


def _texts(count: int, start: int = 0) -> dict[int, str]:
    """Documents of 600 words; each odd one repeats the one before with one word changed."""
    texts: dict[int, str] = {}
    for number in range(start, start + count):
        if number % 2:
            words = texts[number - 1].split()
            words[300] = "changed"
        else:
            words = [f"w{(number * 31 + i * i) % 997}" for i in range(600)]
        texts[number] = " ".join(words)
    return texts


@pytest.fixture(params=list(KINDS))
def kind(request: pytest.FixtureRequest, citus_conn: Conn) -> Iterator[str]:
    """public.app_docs (id bigint key, body text, fp bigint) with 40 rows of text, as this kind of
    table; dropped after the test."""
    citus_conn.execute("DROP TABLE IF EXISTS app_docs CASCADE")
    citus_conn.execute("CREATE TABLE app_docs (id bigint PRIMARY KEY, body text, fp bigint)")
    made = KINDS[request.param]
    if made:
        citus_conn.execute(made)
    with citus_conn.cursor().copy("COPY app_docs (id, body) FROM STDIN") as copy:
        for number, text in _texts(40).items():
            copy.write_row((number, text))
    yield request.param
    citus_conn.execute("DROP TABLE IF EXISTS app_docs CASCADE")


def _rows(conn: Conn) -> dict[str, str]:
    return {
        str(key): str(body)
        for key, body in conn.execute("SELECT id, body FROM app_docs WHERE body IS NOT NULL")
    }


def _answers_equal_brute_force(conn: Conn, capsys: pytest.CaptureFixture[str], made: Index) -> None:
    """Every query face over index "docs" equals brute force over the sketches of app_docs' text."""
    sketches = {key: int(made.sketch(text)) for key, text in _rows(conn).items()}
    k = int(made.cutoff())
    pairs = hamming_pairs(sketches, k)
    assert len(pairs) >= 12  # the planted copies, not an empty answer
    for probe in ("0", "7", "30"):
        expected = sorted(
            (
                (key, d)
                for key, value in sketches.items()
                if (d := bin(value ^ sketches[probe]).count("1")) <= k
            ),
            key=lambda item: (item[1], item[0]),
        )
        assert [(m.key, m.distance) for m in query.near(conn, made, sketches[probe])] == expected
        assert conn.execute("SELECT * FROM simdb.near_key('docs', %s)", (probe,)).fetchall() == expected
        signed = to_signed(sketches[probe])
        assert conn.execute("SELECT * FROM simdb.near('docs', %s::bigint)", (signed,)).fetchall() == expected
        code, out, _ = simdb(capsys, "query", "docs", "--key", probe)
        assert code == 0 and [line.split() for line in out.splitlines()[1:]] == [
            [str(d), key] for key, d in expected
        ]
    assert {(p.key_a, p.key_b, p.distance) for p in duplicates.pairs(conn, made)} == pairs
    assert set(conn.execute("SELECT key_a, key_b, distance FROM simdb.pairs('docs')").fetchall()) == pairs
    code, out, _ = simdb(capsys, "pairs", "docs")
    assert code == 0 and {tuple(line.split(",")) for line in out.splitlines()[1:]} == {
        (a, b, str(d)) for a, b, d in pairs
    }
    groups = components(pairs)
    assert duplicates.clusters(conn, made).groups == groups
    code, out, _ = simdb(capsys, "dedup", "docs", "--keep", "first")
    kept = [line.split(",")[1] for line in out.splitlines()[1:] if line.endswith(",keep")]
    added = dict(conn.execute("SELECT key, added_at FROM simdb.docs").fetchall())
    first = [min(group, key=lambda key: (added[key], key)) for group in groups]  # earliest added
    assert code == 0 and sorted(kept) == sorted(first)
    code, out, _ = simdb(capsys, "export", "docs")
    assert code == 0 and len(out.splitlines()) == len(sketches) + 1


def _change_rows(conn: Conn) -> None:
    """The application writes: new text for rows on several shards at once, a row gone, new rows."""
    conn.execute("UPDATE app_docs SET body = body || ' appended words' WHERE id IN (2, 3, 10, 11, 20)")
    conn.execute("DELETE FROM app_docs WHERE id IN (4, 5)")
    for number, text in _texts(4, start=100).items():
        conn.execute("INSERT INTO app_docs (id, body) VALUES (%s, %s)", (number, text))


def _side_table_follows_the_table(conn: Conn, capsys: pytest.CaptureFixture[str]) -> None:
    """Side table "docs" (attached and synced) answers as brute force before and after the
    application writes and a sync; dropping it leaves nothing of simdb's on the table."""
    made = index.get(conn, "docs")
    _answers_equal_brute_force(conn, capsys, made)
    _change_rows(conn)
    report = keep.sync(conn, "docs")
    assert (report.added, report.updated, report.removed) == (4, 5, 2)
    _answers_equal_brute_force(conn, capsys, made)
    index.drop(conn, "docs")
    assert _simdb_objects_left(conn) == []


def _simdb_objects_left(conn: Conn) -> list[tuple[str, str]]:
    """simdb's B-trees and triggers left on app_docs (on the coordinator's table)."""
    return conn.execute(
        "SELECT 'index', indexname::text FROM pg_indexes WHERE tablename = 'app_docs' AND indexname LIKE 'simdb%%'"
        " UNION ALL SELECT 'trigger', tgname::text FROM pg_trigger"
        " WHERE tgrelid = 'app_docs'::regclass AND NOT tgisinternal"
    ).fetchall()


def test_an_index_in_the_fingerprint_column(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """(a): the application writes each row's fingerprint; simdb's B-trees are on its column."""
    if kind not in WORKS_IN_COLUMN:
        with pytest.raises(InvalidParameter, match=NOT_HASH):
            app_column.attach_in_table(citus_conn, "docs", TABLE, "id", "fp")
        return
    made = app_column.attach_in_table(citus_conn, "docs", TABLE, "id", "fp")
    for key, text in _rows(citus_conn).items():
        value = to_signed(int(made.sketch(text)))
        citus_conn.execute("UPDATE app_docs SET fp = %s WHERE id = %s", (value, int(key)))
    _answers_equal_brute_force(citus_conn, capsys, made)
    # SQLAlchemy's comparator on the model's column probes the same B-trees (on each shard)
    table = Table(
        "app_docs", MetaData(), Column("id", BigInteger), Column("fp", Fingerprint(max_distance=3, blocks=4))
    )
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(citus_conn.info.dsn), poolclass=NullPool
    )
    probe = int(made.sketch(_rows(citus_conn)["6"]))
    with engine.connect() as connection:
        found = connection.execute(select(table.c.id).where(table.c.fp.near(probe, 3))).scalars().all()
    expected = citus_conn.execute("SELECT key::bigint FROM simdb.near_key('docs', '6')").fetchall()
    assert sorted(found) == sorted(key for (key,) in expected) and len(found) >= 2
    index.drop(citus_conn, "docs")
    assert _simdb_objects_left(citus_conn) == []


def test_an_index_in_the_table_that_simdb_fills(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """(b): simdb fills the fingerprint column from the text (sync), and a trigger clears the
    fingerprint of a row whose text changed; on Citus the trigger runs on the shards."""
    arguments = ["attach", "docs", "--table", TABLE, "--key-column", "id", "--fingerprint-column", "fp"]
    if kind not in WORKS_IN_COLUMN:
        code, _, err = simdb(capsys, *arguments, "--text-column", "body")
        assert code == 1 and err.count("\n") == 1 and "not hash-distributed" in err, err
        return
    code, out, err = simdb(capsys, *arguments, "--text-column", "body")
    assert code == 0 and "synced: 40 sketches filled" in out, err
    made = index.get(citus_conn, "docs")
    _answers_equal_brute_force(citus_conn, capsys, made)
    _change_rows(citus_conn)  # (a write to several shards at once: no trigger of simdb's may stop it)
    cleared = citus_conn.execute("SELECT count(*) FROM app_docs WHERE fp IS NULL").fetchone()
    assert cleared == (9,)  # 5 changed texts, 4 new rows
    code, out, _ = simdb(capsys, "sync", "docs")
    assert code == 0 and out.startswith("synced: 9 sketches filled"), out
    _answers_equal_brute_force(citus_conn, capsys, made)
    assert simdb(capsys, "drop", "docs", "--yes")[0] == 0
    assert _simdb_objects_left(citus_conn) == []


def test_a_side_table_with_triggers(citus_conn: Conn, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    """(c): simdb's triggers record the changed keys, and a sync applies them (O(changes)); on a
    distributed table row triggers on its shards write an inbox co-located with it. Citus runs a
    reference or Citus-local table's triggers on shards that may not write simdb's queue."""
    arguments = SIDE_TABLE
    if kind not in WORKS_IN_COLUMN:
        code, _, err = simdb(capsys, *arguments)
        assert code == 1 and err.count("\n") == 1 and "its triggers run on its shards" in err, err
        assert "--no-triggers" in err
        return
    assert simdb(capsys, *arguments)[0] == 0
    made = index.get(citus_conn, "docs")
    _answers_equal_brute_force(citus_conn, capsys, made)
    _change_rows(citus_conn)
    code, out, _ = simdb(capsys, "status", "docs")
    assert code == 0 and "with triggers: 11 rows queued" in out, out  # 5 updated, 2 deleted, 4 new
    report = keep.sync(citus_conn, "docs")
    assert (report.added, report.updated, report.removed) == (4, 5, 2)
    assert isinstance(report, DrainReport) and report.queued == 11  # the changed keys, no table scan
    _answers_equal_brute_force(citus_conn, capsys, made)
    citus_conn.execute("UPDATE app_docs SET fp = 1")  # (not the text: nothing to record)
    assert keep.sync(citus_conn, "docs").changed is False
    citus_conn.execute("TRUNCATE app_docs")  # (not recorded on Citus: a full sync sees it)
    assert keep.sync(citus_conn, "docs", full=True).changed is (kind == "distributed")
    assert citus_conn.execute("SELECT count(*) FROM simdb.docs").fetchone() == (0,)
    index.drop(citus_conn, "docs")
    assert _simdb_objects_left(citus_conn) == []
    assert citus_conn.execute("SELECT to_regclass('simdb.docs__inbox')").fetchone() == (None,)


def test_a_side_table_without_triggers(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """(d): each sync compares the whole table with the index (simdb's table on the coordinator);
    works beside every kind of table. --cascade (a foreign key to the table) is refused on Citus."""
    arguments = [*SIDE_TABLE, "--no-triggers"]
    if kind != "local":
        code, _, err = simdb(capsys, *arguments, "--cascade")
        assert code == 1 and err.count("\n") == 1 and "--cascade is refused" in err, err
    assert simdb(capsys, *arguments)[0] == 0
    assert simdb(capsys, "sync", "docs")[0] == 0
    _side_table_follows_the_table(citus_conn, capsys)
