"""The SQL face: schema migrations, functions equal to Python, simdb.near through the B-trees."""

from __future__ import annotations

import random
import subprocess

import psycopg
import pytest
from psycopg import sql
from support import Conn, btree_values

from simdb import index, ingest, query, schema
from simdb.bits import MASK64, hamming, to_hex, to_signed, to_unsigned
from simdb.embedded import program
from simdb.errors import IndexExists, IndexNotFound, InvalidParameter
from simdb.modes import SimhashIndex, SimhashSpec


def test_head_constant_matches_the_migrations() -> None:
    assert schema.head_revision() == schema.HEAD


def test_migrations_up_down_up(empty_db: str) -> None:
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        index.create(conn, "docs")
        ingest.store(conn, index.get(conn, "docs"), {"a": 1})
    schema.downgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('simdb.docs'), to_regclass('simdb._indexes')").fetchone() == (
            None,
            None,
        )
        assert conn.execute("SELECT to_regprocedure('simdb.hamming(bigint,bigint)')").fetchone() == (None,)
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD


def test_ensure_schema_migrates_once(empty_db: str) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.ensure_schema(conn) is True
        assert schema.ensure_schema(conn) is False


def test_sql_hamming_equals_python(conn: Conn) -> None:
    rng = random.Random(1)
    pairs = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(2000)]
    pairs += [(0, MASK64), (MASK64, MASK64), (1 << 63, 0)]
    rows = conn.execute(
        "SELECT simdb.hamming(a, b) FROM unnest(%s::bigint[], %s::bigint[]) AS t(a, b)",
        ([to_signed(a) for a, _ in pairs], [to_signed(b) for _, b in pairs]),
    ).fetchall()
    assert [r[0] for r in rows] == [hamming(a, b) for a, b in pairs]


@pytest.mark.parametrize(("k", "blocks"), [(0, 1), (1, 2), (3, 4), (3, 5), (4, 7), (6, 8)])
def test_sql_permute_equals_python(conn: Conn, k: int, blocks: int) -> None:
    made = index.create(conn, f"perm_{k}_{blocks}", SimhashSpec(k, blocks))
    rng = random.Random(k * 100 + blocks)
    values = [rng.getrandbits(64) for _ in range(300)] + [0, MASK64, 1 << 63, 1]
    for number, table in enumerate(made.plan.tables):
        rows = conn.execute(
            "SELECT simdb.permute(v, i.block_widths, t.block_order) FROM unnest(%s::bigint[]) AS v,"
            " simdb._indexes i JOIN simdb._tables t ON t.index_name = i.name"
            " WHERE i.name = %s AND t.table_no = %s",
            ([to_signed(v) for v in values], made.name, number),
        ).fetchall()
        assert [to_unsigned(r[0]) for r in rows] == [table.permute(v) for v in values]


@pytest.mark.parametrize(("k", "blocks"), [(0, 1), (3, 5), (6, 8)])
def test_plain_sql_insert_is_indexed_under_the_prefixes_simdb_computes(
    conn: Conn, k: int, blocks: int
) -> None:
    made = index.create(conn, "docs", SimhashSpec(k, blocks))
    rng = random.Random(blocks)
    values = [rng.getrandbits(64) for _ in range(300)] + [0, MASK64, 1 << 63]
    conn.execute(
        "INSERT INTO simdb.docs (key, fingerprint) SELECT 'k' || n, v FROM unnest(%s::bigint[]) WITH ORDINALITY AS t(v, n)",
        ([to_signed(v) for v in values],),
    )
    stored = btree_values(conn, made)
    for n, value in enumerate(values, start=1):
        assert [to_unsigned(p) for p in stored[f"k{n}"]] == [t.prefix(value) for t in made.plan.tables]
    near = conn.execute("SELECT key FROM simdb.near('docs', %s, 0)", (to_signed(values[7]),)).fetchall()
    assert near == [("k8",)]


def test_hex_functions(conn: Conn) -> None:
    for value in (0, 1, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000, 0x0123456789ABCDEF):
        row = conn.execute("SELECT simdb.to_hex(%s), simdb.from_hex(%s)", (to_signed(value), to_hex(value)))
        assert row.fetchone() == (to_hex(value), to_signed(value))
    assert conn.execute("SELECT simdb.from_hex('ff'), simdb.from_hex('00000000000000Ff')").fetchone() == (
        255,
        255,
    )
    for wrong in ("", "1" * 17, "1" * 18, "0x12", "12 ", "xyz"):  # issue 14, item 6: no silent shortening
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="not a 64-bit fingerprint in hex"):
            conn.execute("SELECT simdb.from_hex(%s)", (wrong,))


def _load(conn: Conn, name: str, rows: dict[str, int]) -> index.Index:
    made = index.create(conn, name, SimhashSpec(max_distance=3))
    ingest.store(conn, made, rows)
    ingest.vacuum(conn, made)
    return made


def test_near_plan_probes_every_table_once_and_reads_only_candidates(conn: Conn) -> None:
    rng = random.Random(3)
    made = _load(conn, "docs", {f"r{i}": rng.getrandbits(64) for i in range(20000)})
    rows = conn.execute("SELECT simdb.explain_near('docs', %s)", (to_signed(rng.getrandbits(64)),))
    plan = "\n".join(str(line) for (line,) in rows.fetchall())
    assert isinstance(made, SimhashIndex)
    assert plan.count("Bitmap Index Scan on docs_p") == len(made.plan.tables) == 4, plan
    assert "BitmapOr" in plan, plan
    assert "Seq Scan" not in plan, plan


def test_near_key(conn: Conn) -> None:
    _load(conn, "docs", {"a": 0b1111, "b": 0b0111, "c": 0b0001, "far": 2**64 - 1})
    assert conn.execute("SELECT * FROM simdb.near_key('docs', 'a')").fetchall() == [
        ("a", 0),
        ("b", 1),
        ("c", 3),
    ]
    assert conn.execute("SELECT * FROM simdb.near_key('docs', 'a', 1)").fetchall() == [("a", 0), ("b", 1)]
    with pytest.raises(psycopg.errors.NoDataFound, match="index 'docs' has no key 'zz'"):
        conn.execute("SELECT * FROM simdb.near_key('docs', 'zz')")


def test_near_errors(conn: Conn) -> None:
    _load(conn, "docs", {"a": 1})
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'nope'"):
        conn.execute("SELECT * FROM simdb.near('nope', 1, 1)")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"outside 0\.\.3"):
        conn.execute("SELECT * FROM simdb.near('docs', 1, 4)")


def test_catalog_records_parameters(conn: Conn) -> None:
    index.create(conn, "docs", SimhashSpec(max_distance=2, blocks=4))
    row = conn.execute(
        "SELECT bits, max_distance, blocks, block_widths, features, spec_version FROM simdb._indexes"
    ).fetchone()
    assert row == (64, 2, 4, [16, 16, 16, 16], "word:3", 2)
    assert conn.execute("SELECT count(*) FROM simdb._tables").fetchone() == (6,)


def test_index_name_never_reaches_sql_unquoted(conn: Conn) -> None:
    for bad in ['x"; DROP TABLE simdb._indexes; --', "Docs", "1abc", "a" * 41, "", "a__near"]:
        with pytest.raises(InvalidParameter, match="bad index name"):
            index.create(conn, bad)
    assert conn.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)


def test_create_twice_and_unknown(conn: Conn) -> None:
    index.create(conn, "docs")
    with pytest.raises(IndexExists):
        index.create(conn, "docs")
    with pytest.raises(IndexNotFound):
        index.get(conn, "other")


def test_psql_client_gets_the_same_answers(conn: Conn, dsn: str) -> None:
    rng = random.Random(11)
    rows = {f"r{i}": rng.getrandbits(64) for i in range(500)}
    rows["near"] = rows["r1"] ^ 0b101
    _load(conn, "docs", rows)
    script = "\n".join(
        [
            f"SELECT key, distance FROM simdb.near('docs', {to_signed(rows['r1'])}, 3);",
            "SELECT key, distance FROM simdb.near_key('docs', 'near');",
            "SELECT key_a, key_b, distance FROM simdb.pairs('docs', 2);",
            "SELECT simdb.hamming(-1, 0), simdb.to_hex(-1), simdb.from_hex('ff');",
            "INSERT INTO simdb.docs (key, fingerprint) VALUES ('from_psql', simdb.from_hex('ff'));",
            "SELECT key FROM simdb.near('docs', 255, 0);",
        ]
    )
    result = subprocess.run(
        [str(program("psql")), "-X", "-A", "-t", "-F", ",", "-v", "ON_ERROR_STOP=1", "-d", dsn],
        input=script,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == [
        "r1,0",
        "near,2",  # near
        "near,0",
        "r1,2",  # near_key
        "near,r1,2",  # pairs
        "64,ffffffffffffffff,255",  # hamming, to_hex, from_hex
        "INSERT",
        "0",
        "1",
        "from_psql",
    ]


def test_bulk_load_equals_store(conn: Conn) -> None:
    rng = random.Random(4)
    rows = {f"r{i}": rng.getrandbits(64) for i in range(3000)}
    rows["twin"] = rows["r5"] ^ 1
    bulk = index.create(conn, "bulk")
    done = ingest.bulk_load(conn, bulk, rows.items())
    assert done.rows == len(rows)
    stored = _load(conn, "docs", rows)
    assert (
        conn.execute("SELECT key, fingerprint FROM simdb.bulk ORDER BY key").fetchall()
        == conn.execute("SELECT key, fingerprint FROM simdb.docs ORDER BY key").fetchall()
    )
    assert btree_values(conn, bulk) == btree_values(conn, stored)
    visible = conn.execute(
        "SELECT relallvisible = relpages AND relpages > 0, reltuples FROM pg_class"
        " WHERE oid = 'simdb.bulk'::regclass"
    )
    assert visible.fetchone() == (True, len(rows))  # vacuumed (every page all-visible) and analysed
    plan = "\n".join(str(line) for (line,) in conn.execute("SELECT simdb.explain_near('bulk', 1)"))
    assert plan.count("Bitmap Index Scan on bulk_p") == len(bulk.plan.tables)
    assert [m.key for m in query.near(conn, bulk, rows["r5"])] == ["r5", "twin"]
    with pytest.raises(InvalidParameter, match="is not empty"):
        ingest.bulk_load(conn, bulk, [("x", 1)])
    again = index.create(conn, "again")
    with pytest.raises(InvalidParameter, match=r"bulk_load got a key twice: Key \(key\)=\(x\)"):
        ingest.bulk_load(conn, again, [("x", 1), ("y", 2), ("x", 3)])
    assert conn.execute("SELECT count(*) FROM simdb.again").fetchone() == (0,)  # nothing stored
    assert ingest.bulk_load(conn, again, [("x", 1), ("y", 2)]).rows == 2  # and the index is whole
    assert [m.key for m in query.near(conn, again, 3)] == ["x", "y"]


def _plan_shape(lines: list[str]) -> list[str]:
    """The plan's node names, top to bottom (what explain_near and auto_explain both print)."""
    nodes = []
    for line in lines:
        text = line.strip().removeprefix("->").strip()
        details = (
            "duration:",
            "Query Text",
            "Index Cond",
            "Recheck",
            "Filter",
            "Rows Removed",
            "Heap ",
            "Sort ",
        )
        if text and not text.startswith(details):
            nodes.append(text.split(" on ")[0].split("  (")[0].split(" (actual")[0])
    return nodes


def test_explain_near_shows_the_plan_the_function_runs(conn: Conn) -> None:
    """Issue 14, item 23: on a table filled by plain INSERT and not yet vacuumed, explain_near
    shows the generic plan simdb."NAME__near" runs (seen by auto_explain), not a plan made for
    the one value."""
    rng = random.Random(5)
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    conn.execute(
        "INSERT INTO simdb.docs (key, fingerprint) SELECT 'r' || n, (random() * 9e18)::bigint"
        " FROM generate_series(1, 20000) AS n"
    )
    conn.execute("ANALYZE simdb.docs")
    probe = to_signed(rng.getrandbits(64))
    shown = [str(line) for (line,) in conn.execute("SELECT simdb.explain_near('docs', %s)", (probe,))]
    notices: list[str] = []
    conn.add_notice_handler(lambda notice: notices.append(notice.message_primary or ""))
    conn.execute("LOAD 'auto_explain'")
    for setting, value in (
        ("log_min_duration", "0"),
        ("log_analyze", "on"),
        ("log_nested_statements", "on"),
        ("log_timing", "off"),
        ("log_level", "notice"),
    ):
        conn.execute("SELECT set_config(%s, %s, false)", (f"auto_explain.{setting}", value))
    conn.execute(sql.SQL("SELECT * FROM {}(%s, 3)").format(made.near_function), (probe,)).fetchall()
    conn.execute("RESET auto_explain.log_min_duration")
    inner = [notice for notice in notices if "docs_p" in notice]
    assert len(inner) == 1, notices
    ran = inner[0].splitlines()
    assert _plan_shape(shown) == _plan_shape(ran), (shown, ran)
    assert any("$1" in line for line in shown), shown  # a generic plan: the value is a parameter
