"""The SQL face: schema migrations, functions equal to Python, simdb.near through the B-trees."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time

import psycopg
import pytest
from psycopg import sql
from support import Conn, btree_values, simdb

from simdb import ingest, query, schema
from simdb.db.embedded import program
from simdb.errors import IndexExists, IndexNotFound, InvalidParameter
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardSpec, SimhashIndex, SimhashSpec
from simdb.sketch.bits import MASK64, hamming, parse_hex, to_hex, to_signed, to_unsigned


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


def _visible(dsn: str) -> tuple[object, ...] | None:
    """What another session sees: simdb's schema and the application's table (None: not there)."""
    with psycopg.connect(dsn, autocommit=True) as other:
        return other.execute("SELECT to_regnamespace('simdb'), to_regclass('public.app')").fetchone()


@pytest.mark.parametrize("end", ["rollback", "commit"])
def test_ensure_schema_runs_in_the_callers_transaction_and_never_ends_it(empty_db: str, end: str) -> None:
    """ensure_schema committed the caller's transaction (a Django migration's
    half-done work with it), then migrated on a connection of its own."""
    with psycopg.connect(empty_db) as conn:
        conn.execute("CREATE TABLE public.app (id int)")
        conn.execute("INSERT INTO public.app VALUES (1)")
        assert schema.ensure_schema(conn) is True
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert schema.current_revision(conn) == schema.HEAD
        assert conn.execute("SELECT count(*) FROM public.app").fetchone() == (1,)
        assert _visible(empty_db) == (None, None)  # nothing committed
        getattr(conn, end)()
    assert _visible(empty_db) == ((None, None) if end == "rollback" else ("simdb", "app"))


def test_ensure_schema_in_autocommit_mode_migrates_in_a_transaction_of_its_own(empty_db: str) -> None:
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.ensure_schema(conn) is True
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _visible(empty_db) == ("simdb", None)


def test_concurrent_first_runs_of_ensure_schema_migrate_one_after_the_other(empty_db: str) -> None:
    """A second process waits for the first one's migration (an advisory lock held to the end of
    its transaction), then finds the schema there, instead of failing on tables that exist."""
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with psycopg.connect(empty_db, autocommit=True) as conn:
                schema.ensure_schema(conn)
                assert schema.current_revision(conn) == schema.HEAD
        except BaseException as error:  # (re-raised in the test's thread)
            errors.append(error)

    with psycopg.connect(empty_db) as first:
        schema.ensure_schema(first)
        thread = threading.Thread(target=second)
        thread.start()
        with psycopg.connect(empty_db, autocommit=True) as watcher:
            for _ in range(600):  # until the second one waits for the lock
                waiting = watcher.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
                if waiting == (1,) or not thread.is_alive():
                    break
                time.sleep(0.05)
            assert waiting == (1,)
        first.commit()
        thread.join()
    assert errors == []


def test_a_schema_migrated_by_a_newer_simdb_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    """An older simdb on a database a newer one upgraded: Alembic's traceback (\"Can't locate
    revision\") became one line saying which simdb to use."""
    conn.execute("UPDATE simdb._alembic_version SET version_num = '9999'")
    code, out, err = simdb(capsys, "list")
    assert (code, out) == (1, "")
    assert err == (
        f"simdb: error: the simdb schema in database {conn.info.dbname!r} is at revision 9999, newer than"
        f" this simdb knows ({schema.HEAD}): a newer simdb upgraded it (upgrade simdb (pip install -U"
        " simdb-pg), or connect to another database)\n"
    )


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
    for wrong in (
        "",
        "1" * 17,
        "1" * 18,
        "0x",
        "x12",
        "1 2",
        "xyz",
    ):  # no silent shortening
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="not a 64-bit fingerprint in hex"):
            conn.execute("SELECT simdb.from_hex(%s)", (wrong,))


# Python ints as psycopg sends them: a smallint, an integer, a bigint, a numeric (>= 2^63).
FORMS = [0, 7, -1, 300, 70_000, -(2**31), 2**40, -(2**63), 2**63 - 1, 2**63, 0xA70392059DDFCBCE, MASK64]


def test_fingerprint_functions_take_every_form_simdb_near_takes(conn: Conn) -> None:
    """simdb.hamming, to_hex and permute take a fingerprint as psycopg sends a Python int of any
    size (smallint, integer, bigint, numeric: unsigned up to 2^64 - 1, or signed), beside a bigint
    column or hex text too, and answer as for its bigint; numbers they cannot read are refused."""
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    ingest.store(conn, made, {"a": 0xA70392059DDFCBCF})
    widths, order = list(made.plan.widths), list(made.plan.tables[1].order)
    for a in FORMS:
        unsigned = a & MASK64
        row = conn.execute(
            "SELECT simdb.to_hex(%s), simdb.permute(%s, %s, %s), simdb.hamming(fingerprint, %s),"
            " simdb.hamming(%s, to_hex(fingerprint)), simdb.hamming(simdb.to_hex(fingerprint), %s)"
            " FROM simdb.docs",
            (a, a, widths, order, a, a, a),
        ).fetchone()
        distance = hamming(unsigned, 0xA70392059DDFCBCF)
        assert row == (
            to_hex(unsigned),
            to_signed(made.plan.tables[1].permute(unsigned)),
            distance,
            distance,
            distance,
        )
        near = conn.execute("SELECT * FROM simdb.near('docs', %s)", (a,)).fetchall()
        assert near == ([("a", distance)] if distance <= 3 else [])
        for b in FORMS:
            found = conn.execute("SELECT simdb.hamming(%s, %s)", (a, b)).fetchone()
            assert found == (hamming(unsigned, b & MASK64),), (a, b)
    assert conn.execute("SELECT simdb.to_hex('0xff'), simdb.hamming(255, 'ff')").fetchone() == (
        "00000000000000ff",
        0,
    )
    for wrong in (2**64, -(2**63) - 1):
        with pytest.raises(
            psycopg.errors.InvalidParameterValue, match=f"simdb: {wrong} is not a 64-bit fingerprint"
        ):
            conn.execute("SELECT simdb.hamming(fingerprint, %s) FROM simdb.docs", (wrong,))


@pytest.mark.parametrize(
    ("widths", "order", "message", "hint"),
    [
        ([16, 16, 16, 15], [0, 1, 2, 3], "block widths {16,16,16,15} do not split 64 bits", None),
        ([32, 33], [0, 1], "block widths {32,33} do not split 64 bits", None),
        ([64, 0], [0, 1], "block widths {64,0} do not split 64 bits", None),
        ([], [], "block widths {} do not split 64 bits", None),
        ([16, 16, 16, 16], [0, 1, 1, 3], "block order {0,1,1,3} is not an order of the 4 blocks", 3),
        ([16, 16, 16, 16], [0, 1, 2], "block order {0,1,2} is not an order of the 4 blocks", 3),
        ([16, 16, 16, 16], [0, 1, 2, 4], "block order {0,1,2,4} is not an order of the 4 blocks", 3),
        ([32, 32], [-1, 0], "block order {-1,0} is not an order of the 2 blocks", 1),
    ],
)
def test_permute_refuses_widths_and_orders_that_are_no_split_of_64_bits(
    conn: Conn, widths: list[int], order: list[int], message: str, hint: int | None
) -> None:
    """simdb.permute returned 0 (or dropped bits) for widths that do not add up to 64 or a block
    order that repeats or misses a block; it names them."""
    with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
        conn.execute("SELECT simdb.permute(-1::bigint, %s::integer[], %s::integer[])", (widths, order))
    assert refused.value.diag.message_primary == f"simdb: {message}"
    assert refused.value.diag.message_hint == (
        "give positive widths that add up to 64, as simdb._indexes.block_widths holds them (e.g. '{16,16,16,16}')"
        if hint is None
        else f"name each block from 0 to {hint} once, as simdb._tables.block_order holds it"
        " (e.g. '{2,3,0,1}' for 4 blocks)"
    )


def _load(conn: Conn, name: str, rows: dict[str, int]) -> index.Index:
    made = index.create(conn, name, SimhashSpec(max_distance=3))
    ingest.store(conn, made, rows)
    ingest.vacuum(conn, made)
    return made


def test_near_plan_verifies_candidates_in_the_btrees_and_reads_only_the_rows_found(conn: Conn) -> None:
    """B-trees that carry the fingerprint (the planner's choice at 100M rows): each is scanned
    index-only under the query's prefix (no table page read for a candidate), and table 0's B-tree
    finds the rows of what matched."""
    rng = random.Random(3)
    rows = {f"r{i}": rng.getrandbits(64) for i in range(20000)}
    made = index.create(conn, "docs", SimhashSpec(max_distance=3, covering=True))
    ingest.store(conn, made, rows)
    ingest.vacuum(conn, made)
    assert isinstance(made, SimhashIndex) and made.covering
    query = rows["r7"] ^ 0b101  # (r7 within 2 bits)
    explained = conn.execute("SELECT simdb.explain_near('docs', %s)", (to_signed(query),))
    plan = "\n".join(str(line) for (line,) in explained.fetchall())
    assert plan.count("Index Only Scan using docs_p") == len(made.plan.tables) == 4, plan
    assert plan.count("Heap Fetches: 0") == 4, plan
    assert "Index Scan using docs_p0" in plan, plan
    assert "Seq Scan" not in plan and "Bitmap" not in plan, plan
    assert conn.execute("SELECT * FROM simdb.near('docs', %s)", (to_signed(query),)).fetchall() == [("r7", 2)]


def test_near_plan_over_btrees_on_the_prefix_alone_probes_every_table_once(conn: Conn) -> None:
    """B-trees on the prefix alone (the planner's choice at a million rows, and every index made
    before revision 0020): one bitmap scan of each, OR-ed, the candidates verified on their rows."""
    rng = random.Random(3)
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    ingest.store(conn, made, {f"r{i}": rng.getrandbits(64) for i in range(20000)})
    ingest.vacuum(conn, made)
    assert conn.execute("SELECT covering FROM simdb._indexes").fetchone() == (False,)
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
    with pytest.raises(InvalidParameter, match=r"a key is given twice: Key \(key\)=\(x\)"):
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
    """On a table filled by plain INSERT and not yet vacuumed, explain_near
    shows the generic plan simdb_internal."NAME__near" runs (seen by auto_explain), not a plan made for
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


def test_the_printed_hex_is_a_fingerprint_wherever_sql_takes_one(conn: Conn) -> None:
    """The hex every command prints goes into SQL as it is (a literal, or a
    parameter sent untyped), read as hex even when it has only digits; a bigint stays a number."""
    digits, letters = 0x1234567812345678, 0xA126D80B0BAEA59F
    _load(conn, "docs", {"digits": digits, "letters": letters})
    assert (to_hex(digits), to_hex(letters)) == ("1234567812345678", "a126d80b0baea59f")
    for given, key in (
        ("a126d80b0baea59f", "letters"),
        ("1234567812345678", "digits"),
        ("0XA126D80B0BAEA59F", "letters"),
        (" 0x1234567812345678\n", "digits"),
    ):
        literal = conn.execute(f"SELECT key, distance FROM simdb.near('docs', '{given}', 0)").fetchall()
        untyped = conn.execute("SELECT key, distance FROM simdb.near('docs', %s, 0)", (given,)).fetchall()
        assert literal == untyped == [(key, 0)]
    assert conn.execute("SELECT key FROM simdb.near('docs', 1311768465173141112, 0)").fetchall() == [
        ("digits",)
    ]  # the same fingerprint as a number
    assert conn.execute("SELECT key FROM simdb.near('docs', %s, 0)", (to_signed(letters),)).fetchall() == [
        ("letters",)
    ]
    same = conn.execute(
        "SELECT simdb.hamming(fingerprint, '1234567812345678'), simdb.hamming('a126d80b0baea59f', fingerprint),"
        " simdb.hamming(%s, fingerprint) FROM simdb.docs ORDER BY key",
        ("0x1234567812345678",),
    ).fetchall()
    assert same == [(0, hamming(digits, letters), 0), (hamming(digits, letters), 0, hamming(digits, letters))]
    assert conn.execute(
        "SELECT simdb.hamming('ff', '0x0'), simdb.hamming(0, 'ff'), simdb.hamming('10', 0)"
    ).fetchone() == (
        8,
        8,
        1,
    )
    assert conn.execute(
        "SELECT simdb.permute('ff', '{16,16,16,16}', '{3,2,1,0}') = simdb.permute(255, '{16,16,16,16}', '{3,2,1,0}')"
    ).fetchone() == (True,)
    plan = conn.execute("SELECT simdb.explain_near('docs', '1234567812345678', 0)").fetchall()
    assert plan == conn.execute("SELECT simdb.explain_near('docs', 1311768465173141112, 0)").fetchall()
    assert any("Rows Removed by Filter: 1" in str(line) for (line,) in plan), plan  # one row found
    with pytest.raises(
        psycopg.errors.InvalidParameterValue,
        match="'-6412120891624272946' is not a 64-bit fingerprint in hex",
    ) as refused:
        conn.execute("SELECT * FROM simdb.near('docs', '-6412120891624272946')")
    assert refused.value.diag.message_hint == (
        "give 1 to 16 hex digits, optionally after 0x, as simdb fingerprint and simdb.to_hex print them"
        " (a fingerprint as a number is a bigint: unquoted, or ::bigint)"
    )
    index.create(conn, "wide", SimhashSpec(bits=128))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="'a126d80b0baea59f' is not a 128-bit"):
        conn.execute("SELECT * FROM simdb.near('wide', 'a126d80b0baea59f')")
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'nothing'"):
        conn.execute("SELECT * FROM simdb.near('nothing', 'not hex at all')")


def _python_hex(text: str, bits: int) -> int | None:
    try:
        return parse_hex(text, bits)
    except InvalidParameter:
        return None


def _sql_hex(conn: Conn, text: str, bits: int) -> int | None:
    """The value SQL reads from hex text: simdb.from_hex for 64 bits, simdb.near's rule for 128."""
    try:
        if bits == 64:
            row = conn.execute("SELECT simdb.from_hex(%s)", (text,)).fetchone()
            return None if row is None else to_unsigned(int(str(row[0])))
        row = conn.execute("SELECT simdb_internal._parsed_fingerprint(%s, 128)", (text,)).fetchone()
        return None if row is None else int(str(row[0]), 2)
    except psycopg.errors.InvalidParameterValue as error:
        assert f"is not a {bits}-bit fingerprint in hex" in str(error)
        return None


HEX_CASES = [
    "0x1f", "0X1F", "1f", " 1f\n", "\t0xff \r", "\x0b1f\x0c", "0", "0x0", "f" * 16, "0x" + "F" * 16, "0" * 16,
    "", "0x", "x1f", "0x0x1f", "1 f", "-1f", "+1f", "1_f", "\uff11f", "\u00a01f", "1f\u2003", "f" * 17,
    "0x" + "0" * 17, "0x " + "1f", "1" * 32, "0x" + "a" * 32, "1" * 33,
    "01" * 64, " " + "10" * 64 + "\n", "1" * 127, "1" * 129, "0x" + "1" * 128, "01" * 32, "0" * 128,
]  # fmt: skip


def test_one_hex_rule_for_the_cli_and_sql(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    """simdb.from_hex reads exactly what --fingerprint reads (1 to 16 hex
    digits, optionally after 0x, optionally between ASCII blanks), as the same value; the
    128-bit rule of simdb.near's text form likewise (which also takes all 128 binary digits).
    Tested on chosen cases and random ones."""
    rng = random.Random(17)
    pieces = ["", " ", "\t", "\n", "0x", "0X", "x", "-", "_", "g", "\u00a0"]
    randomized = [
        rng.choice(pieces)
        + rng.choice(["", "0x", "0X", "00x"])
        + "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(rng.randrange(0, 35)))
        + rng.choice(pieces)
        for _ in range(600)
    ]
    binary = ["".join(rng.choice("01") for _ in range(rng.choice([64, 127, 128, 129]))) for _ in range(100)]
    for text in HEX_CASES + randomized + binary:
        for bits in (64, 128):
            assert _sql_hex(conn, text, bits) == _python_hex(text, bits), (text, bits)
    assert _sql_hex(conn, "0x1f", 64) == 31
    _load(conn, "docs", {"a": 0x1F, "b": 0x1E})
    code, out, err = simdb(capsys, "query", "docs", "--fingerprint", "0x1f", "-k", "0", "--json")
    assert (code, err) == (0, "") and '"key": "a"' in out and '"key": "b"' not in out


PUBLIC_FUNCTIONS = {
    "explain_near",
    "explain_similar",
    "from_hex",
    "hamming",
    "jaccard_estimate",
    "near",
    "near_key",
    "pairs",
    "pairs_since",
    "permute",
    "similar",
    "similar_key",
    "similar_pairs",
    "similar_pairs_since",
    "to_hex",
}


def test_df_lists_the_public_functions_each_with_its_comment(conn: Conn, dsn: str) -> None:
    """psql's `\\df simdb.*` lists the public functions only (the checks, the
    dispatcher's fallback and each index's own functions are in simdb_internal), and every one
    has a comment saying what it does, its arguments and an example (which runs, and gives the
    answer the comment says where it says one)."""
    ingest.store(
        conn,
        index.create(conn, "docs"),
        {"notes/a.txt": 0xA70392059DDFCBCE, "notes/b.txt": 0xA70392059DDFCBCF},
    )
    pages = index.create(conn, "pages", JaccardSpec())
    signature = pages.sketch("a few words of text " * 20)
    ingest.store(conn, pages, {"https://example.com/a": signature, "https://example.com/b": signature})
    wide = {"w": 0xEFCEB58A6BA35F8AA70392059DDFCBCE}
    ingest.store(conn, index.create(conn, "wide", SimhashSpec(bits=128)), wide)
    listed = subprocess.run(
        [str(program("psql")), "-X", "-A", "-t", "-F", ",", "-d", dsn, "-c", "\\df simdb.*"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert {line.split(",")[1] for line in listed.stdout.splitlines()} == PUBLIC_FUNCTIONS
    comments = dict(
        conn.execute(
            "SELECT p.oid::regprocedure::text, coalesce(obj_description(p.oid, 'pg_proc'), '')"
            " FROM pg_proc AS p WHERE p.pronamespace = 'simdb'::regnamespace"
        ).fetchall()
    )
    assert len(comments) == 44
    for function, comment in comments.items():
        assert "Argument" in str(comment) and "Example: SELECT " in str(comment), function
        example, _, answer = str(comment).split("Example: ")[1].partition("  -- ")
        first = conn.execute(example).fetchone()
        assert first is not None and (not answer or str(first[0]) == answer), (function, first)
    internal = {
        str(name)
        for (name,) in conn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'simdb_internal'::regnamespace"
        )
    }
    assert {
        "docs__near",
        "docs__pairs",
        "pages__near",
        "pages__pairs",
        "_near_dynamic",
        "_checked_distance",
    } <= internal


def _answers(conn: Conn, docs: int) -> list[object]:
    """What the SQL functions answer for the indexes of the upgrade test."""
    return [
        conn.execute("SELECT * FROM simdb.near('docs', %s)", (to_signed(docs),)).fetchall(),
        conn.execute("SELECT * FROM simdb.near_key('docs', 'a')").fetchall(),
        conn.execute("SELECT * FROM simdb.pairs('docs')").fetchall(),
        conn.execute("SELECT * FROM simdb.similar_key('pages', 'p')").fetchall(),
        conn.execute("SELECT * FROM simdb.similar_pairs('pages')").fetchall(),
        conn.execute("SELECT * FROM simdb.near_key('wide', 'w')").fetchall(),
        len(conn.execute("SELECT simdb.explain_near('docs', %s)", (to_signed(docs),)).fetchall()) > 3,
    ]


def test_upgrade_to_0011_moves_existing_index_functions_and_keeps_readers(empty_db: str) -> None:
    """Indexes made before revision 0011 (functions in schema simdb), and the
    roles granted them, keep working when the internals move to simdb_internal."""
    reader = f"simdb_upgrade_reader_{os.getpid()}"
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(reader)))
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(reader)))
        ingest.store(conn, index.create(conn, "docs"), {"a": 0b1111, "b": 0b0111, "c": 2**64 - 1})
        pages = index.create(conn, "pages", JaccardSpec())
        ingest.store(conn, pages, {"p": pages.sketch("a few words of text " * 20)})
        wide = index.create(conn, "wide", SimhashSpec(bits=128))
        ingest.store(conn, wide, {"w": wide.sketch("other words " * 30)})
        index.grant(conn, "docs", reader)
        expected = _answers(conn, 0b1111)
    try:
        schema.downgrade(empty_db, "0010")
        with psycopg.connect(empty_db, autocommit=True) as conn:
            assert conn.execute(
                "SELECT count(*) FROM pg_proc WHERE pronamespace = 'simdb_internal'::regnamespace"
            ).fetchone() == (0,)
            assert conn.execute(
                "SELECT to_regprocedure('simdb.docs__near(bigint, integer)') IS NOT NULL,"
                " to_regprocedure('simdb._checked_distance(text, integer)') IS NOT NULL,"
                " bool_or(near_sql LIKE '%%simdb_internal%%') FROM simdb._indexes"
            ).fetchone() == (True, True, False)
            assert _answers(conn, 0b1111) == expected  # revision 0010's functions, as they were
        schema.upgrade(empty_db)
        with psycopg.connect(empty_db, autocommit=True) as conn:
            assert conn.execute(
                "SELECT to_regprocedure('simdb.docs__near(bigint, integer)'),"
                " to_regprocedure('simdb_internal.docs__near(bigint, integer)') IS NOT NULL"
            ).fetchone() == (None, True)
            assert _answers(conn, 0b1111) == expected
            conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(reader)))
            assert conn.execute("SELECT key FROM simdb.near('docs', 'f', 1)").fetchall() == [("a",), ("b",)]
            assert conn.execute("SELECT count(*) FROM simdb.pairs('docs')").fetchone() == (1,)
            conn.execute("RESET ROLE")
    finally:
        with psycopg.connect(empty_db, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(reader)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(reader)))
