"""An index in the application's own table (attach --fingerprint-column / --signature-column):
what the application writes is searchable in its own transaction, a rollback leaves no trace,
simdb fills and refreshes sketches from a text column, and drop removes exactly simdb's objects.
(The contract suite, test_contract.py, checks every query face on it against brute force.)"""

from __future__ import annotations

import json
import threading

import psycopg
import pytest
from psycopg import sql
from support import Conn, simdb

from simdb import fingerprint, ingest, query, schema
from simdb.errors import IndexMismatch, InvalidParameter, SimdbError
from simdb.follow import app_column, keep
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardSpec, SimhashIndex, SimhashSpec
from simdb.index.placement import Distributed
from simdb.plan import planner
from simdb.sketch.bits import to_signed
from simdb.sketch.features import DEFAULT_FEATURES

BODY = " ".join(f"word{i} topic{i % 11}" for i in range(300))
OTHER = "something else entirely, about other things and more of them"


@pytest.fixture
def articles(conn: Conn) -> Conn:
    conn.execute("CREATE TABLE public.articles (id bigserial PRIMARY KEY, body text, fp bigint, lang text)")
    conn.execute(
        "INSERT INTO public.articles (body, lang) VALUES (%s, 'en'), (%s, 'en'), (%s, 'en'), (NULL, 'en')",
        (BODY, BODY + " extra", OTHER),
    )
    return conn


def _fingerprints(conn: Conn) -> dict[int, int | None]:
    return dict(conn.execute("SELECT id, fp FROM public.articles ORDER BY id").fetchall())  # type: ignore[arg-type]


def _near(conn: Conn, key: str) -> list[tuple[str, int]]:
    return [(str(k), int(d)) for k, d in conn.execute("SELECT * FROM simdb.near_key('arts', %s)", (key,))]


def test_attach_fills_the_column_and_every_face_answers_with_the_table_key(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    code, out, err = simdb(
        capsys,
        "attach", "arts", "--table", "public.articles", "--key-column", "id",
        "--fingerprint-column", "fp", "--text-column", "body",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == (
        "synced: 3 sketches filled, 0 rows whose text has no words (left without one);"
        " rows with a sketch were not read"
    )
    stored = _fingerprints(articles)  # (`simdb attach` makes a one-bit MinHash index)
    assert stored[1] == to_signed(fingerprint(BODY, spec=3)) and stored[3] == to_signed(
        fingerprint(OTHER, spec=3)
    )
    assert stored[4] is None  # NULL text: nothing to fingerprint
    assert _near(articles, "1")[0] == ("1", 0)
    near = query.near(articles, index.get(articles, "arts"), fingerprint(BODY, spec=3))
    assert [match.key for match in near][:1] == ["1"]
    joined = articles.execute(
        "SELECT a.id, n.distance FROM simdb.near('arts', %s::bigint) AS n JOIN public.articles AS a"
        " ON a.id = n.key::bigint ORDER BY n.distance, a.id LIMIT 1",
        (to_signed(fingerprint(BODY, spec=3)),),
    ).fetchall()
    assert joined == [(1, 0)]


def test_a_write_is_found_in_its_own_transaction_and_a_rollback_leaves_no_trace(articles: Conn) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp")
    value = to_signed(fingerprint("a brand new document written by the application itself"))
    with articles.transaction() as transaction:
        (key,) = articles.execute(
            "INSERT INTO public.articles (body, fp) VALUES ('x', %s) RETURNING id", (value,)
        ).fetchone() or (None,)
        found = articles.execute("SELECT key FROM simdb.near('arts', %s::bigint, 0)", (value,)).fetchall()
        assert found == [(str(key),)]
        raise psycopg.Rollback(transaction)
    assert articles.execute("SELECT key FROM simdb.near('arts', %s::bigint, 0)", (value,)).fetchall() == []


def test_a_text_change_clears_the_sketch_unless_the_write_sets_it_and_sync_refills(articles: Conn) -> None:
    made = app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    assert keep.sync(articles, "arts").as_dict() == {"filled": 3, "empty": 0}
    articles.execute("UPDATE public.articles SET body = %s WHERE id = 1", (OTHER,))
    articles.execute("UPDATE public.articles SET lang = 'de' WHERE id = 2")  # text untouched: kept
    articles.execute("UPDATE public.articles SET body = 'own value', fp = 42 WHERE id = 3")  # the app's wins
    assert _fingerprints(articles) == {1: None, 2: to_signed(fingerprint(BODY + " extra")), 3: 42, 4: None}
    assert _near(articles, "3") == [("3", 0)]  # row 1 is not in the index while its sketch is missing
    articles.execute("UPDATE public.articles SET body = '' WHERE id = 2")  # emptied: leaves the index
    assert app_column.fill(articles, made, made.storage).as_dict() == {"filled": 1, "empty": 1}  # type: ignore[arg-type]
    assert _fingerprints(articles) == {1: to_signed(fingerprint(OTHER)), 2: None, 3: 42, 4: None}
    assert keep.sync(articles, "arts").as_dict() == {"filled": 0, "empty": 1}


def test_a_write_that_sets_the_sketch_it_had_keeps_it(articles: Conn) -> None:
    """An UPDATE that names the sketch column keeps the value it gives, even the one the row had
    (an ORM saving every column after a punctuation-only edit); one that leaves it out clears it,
    and one that sets it to NULL clears it too; one statement may do all three to its rows."""
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    keep.sync(articles, "arts")
    before = _fingerprints(articles)
    articles.execute("UPDATE public.articles SET body = body || '.', fp = fp WHERE id = 1")
    assert _fingerprints(articles) == before
    articles.execute(
        "UPDATE public.articles SET body = body || '!',"
        " fp = CASE id WHEN 1 THEN fp WHEN 2 THEN NULL ELSE fp END WHERE id IN (1, 2)"
    )
    articles.execute("UPDATE public.articles SET body = body || '?' WHERE id IN (1, 3)")
    articles.execute("UPDATE public.articles SET fp = fp WHERE id = 1")  # (no text: nothing left over)
    articles.execute("UPDATE public.articles SET body = 'a rewritten text' WHERE id = 1")
    assert _fingerprints(articles) == {1: None, 2: None, 3: None, 4: None}
    with articles.transaction():  # a later statement of the transaction is not taken for the first
        articles.execute("UPDATE public.articles SET body = %s, fp = 7 WHERE id = 2", (BODY,))
        articles.execute("UPDATE public.articles SET body = body || '.', fp = fp WHERE id = 2")
        articles.execute("UPDATE public.articles SET body = body || '.' WHERE id = 2")
    assert _fingerprints(articles)[2] is None


def test_the_migration_gives_an_older_index_the_trigger_that_keeps_a_sketch_written(empty_db: str) -> None:
    """An index made before the claiming trigger (so, without it) gets it from the migration."""
    schema.upgrade(empty_db, "0015")
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.articles (id bigserial PRIMARY KEY, body text, fp bigint)")
        conn.execute("INSERT INTO public.articles (body) VALUES (%s), (%s)", (BODY, OTHER))
        app_column.attach_in_table(conn, "arts", "public.articles", "id", "fp", "body")
        conn.execute("DROP TRIGGER IF EXISTS simdb_arts_claim ON public.articles")  # as 0015 left it
        written = "UPDATE public.articles SET fp = %s WHERE id = %s"  # (as a sync of then would)
        conn.execute(written, (to_signed(fingerprint(BODY)), 1))
        conn.execute(written, (to_signed(fingerprint(OTHER)), 2))
        conn.execute("UPDATE public.articles SET body = body || '.', fp = fp WHERE id = 1")
        assert _fingerprints(conn)[1] is None  # the old trigger cleared what the write gave
        conn.execute(written, (to_signed(fingerprint(BODY)), 1))
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        before = _fingerprints(conn)
        conn.execute("UPDATE public.articles SET body = body || '.', fp = fp WHERE id = 1")
        conn.execute("UPDATE public.articles SET body = body || '.' WHERE id = 2")
        assert _fingerprints(conn) == {1: before[1], 2: None}
        assert before[1] is not None


def test_a_fill_of_a_page_or_more_vacuums_the_table_and_a_small_one_does_not(conn: Conn) -> None:
    """Each row a fill gives a sketch leaves a dead version behind: a fill of a table of ten pages
    (BATCH rows) or more vacuums it each time it has written a tenth of it, so later pages reuse
    the space (the table grows by far less than double), and a fill of a page or more vacuums at
    its end, so no dead entry is left for later syncs to walk; fewer rows are left to autovacuum."""
    conn.execute("CREATE TABLE public.articles (id bigserial PRIMARY KEY, body text, fp bigint)")
    conn.execute(
        "INSERT INTO public.articles (body) SELECT 'note ' || n || ' on topic ' || n %% 97"
        " FROM generate_series(1, %s) AS n",
        (10 * app_column.BATCH + 10,),
    )
    conn.execute("ALTER TABLE public.articles SET (autovacuum_enabled = off)")
    vacuums = "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'public.articles'::regclass"

    def vacuumed() -> object:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        return (conn.execute(vacuums).fetchone() or (None,))[0]

    size = "SELECT pg_table_size('public.articles')"
    app_column.attach_in_table(conn, "arts", "public.articles", "id", "fp", "body", defer_btrees=True)
    before = (conn.execute(size).fetchone() or (0,))[0]
    assert keep.sync(conn, "arts").as_dict() == {"filled": 10 * app_column.BATCH + 10, "empty": 0}
    assert vacuumed() == 6  # after each 2 pages of 2,000 rows (a tenth: 2,001 rows), and at the end
    assert (conn.execute(size).fetchone() or (0,))[0] < 1.4 * before  # (2x without)
    conn.execute("UPDATE public.articles SET body = body || ' again' WHERE id <= 5")
    assert keep.sync(conn, "arts").as_dict() == {"filled": 5, "empty": 0}
    assert vacuumed() == 6  # (left to autovacuum)


def test_sync_writes_no_stale_sketch_over_a_text_changed_meanwhile(articles: Conn, dsn: str) -> None:
    """The fill writes a sketch only where the text is still the one it sketched."""
    made = app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    rows = [("1", fingerprint(BODY), "not the md5 of the text now")]
    assert app_column._write(articles, made, made.storage, "bigint", rows) == (0, 0)  # type: ignore[arg-type]
    assert _fingerprints(articles)[1] is None


def test_watch_fills_a_commit_without_polling(articles: Conn, dsn: str) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    reports: list[object] = []
    with psycopg.connect(dsn, autocommit=True) as watcher:
        listening = threading.Thread(
            target=keep.watch, args=(watcher, "arts", 3600.0, reports.append, 2), daemon=True
        )
        listening.start()
        while not reports:  # the first fill (everything) is done: it is listening
            listening.join(0.05)
        articles.execute("INSERT INTO public.articles (body) VALUES (%s)", (BODY + " again",))
        listening.join(60)
    assert not listening.is_alive()  # woken by NOTIFY, not by the hour-long timer
    assert [report.as_dict() for report in reports] == [  # type: ignore[attr-defined]
        {"filled": 3, "empty": 0},
        {"filled": 1, "empty": 0},
    ]


def test_writes_through_simdb_are_refused(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    keep.sync(articles, "arts")
    made = index.get(articles, "arts")
    hint = (
        "(write that table: a row is in the index while its fp is set (and leaves it when the row is"
        " deleted or its fp set to NULL))"
    )
    for command in (["delete", "arts", "1"], ["prune", "arts", "--older-than", "1d", "--yes"]):
        code, _, err = simdb(capsys, *command)
        assert (code, err) == (
            1,
            f"simdb: error: {command[0]} does not write index 'arts': its rows are the rows of"
            f" public.articles {hint}\n",
        )
    with pytest.raises(InvalidParameter, match="ingest does not write index 'arts'"):
        ingest.ingest(articles, made, [])
    assert _fingerprints(articles)[1] is not None


def test_drop_removes_exactly_simdbs_objects(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    articles.execute("CREATE INDEX articles_lang ON public.articles (lang)")
    before = _objects(articles)
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    keep.sync(articles, "arts")
    assert _objects(articles) - before == {
        "index simdb_arts_key", "index simdb_arts_p0", "index simdb_arts_p1", "index simdb_arts_p2",
        "index simdb_arts_p3", "index simdb_arts_unfilled", "trigger simdb_arts_claim",
        "trigger simdb_arts_clear", "trigger simdb_arts_wake",
    }  # fmt: skip
    assert simdb(capsys, "drop", "arts", "--yes") == (0, "dropped index arts\n", "")
    assert _objects(articles) == before
    assert articles.execute("SELECT to_regclass('simdb.arts')").fetchone() == (None,)
    functions = "SELECT count(*) FROM pg_proc WHERE proname LIKE 'arts\\_\\_%'"
    assert articles.execute(functions).fetchone() == (0,)
    assert _fingerprints(articles)[1] is not None  # the application's data stays


def test_drop_after_the_table_was_renamed(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    """simdb's triggers go with their functions wherever the table is now (dropping them by the
    recorded table name found nothing, and the functions they call then refused to go)."""
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    articles.execute("ALTER TABLE public.articles RENAME TO posts")
    assert simdb(capsys, "drop", "arts", "--yes") == (0, "dropped index arts\n", "")
    articles.execute("ALTER TABLE public.posts RENAME TO articles")
    assert _objects(articles) == {"index articles_pkey"}


def _objects(conn: Conn) -> set[str]:
    rows = conn.execute(
        "SELECT 'index ' || indexname FROM pg_indexes WHERE tablename = 'articles'"
        " UNION ALL SELECT 'trigger ' || tgname FROM pg_trigger"
        " WHERE tgrelid = 'public.articles'::regclass AND NOT tgisinternal"
    )
    return {str(name) for (name,) in rows}


def test_attach_checks_the_columns_first(articles: Conn) -> None:
    articles.execute("CREATE TABLE public.plain (id int, fp bigint)")  # no unique key
    cases = [
        (("public.articles", "id", "body"), "--fingerprint-column 'body' of public.articles is text;"),
        (("public.articles", "id", "fp", "lang", None, JaccardSpec()), "is bigint; index 'arts' (jaccard"),
        (("public.plain", "id", "fp"), "--key-column 'id' of public.plain is not a primary key or unique"),
        (("public.articles", "id", "fp", None, "(SELECT true)"), "must look at one row of public.articles"),
        (("public.nope", "id", "fp"), "no table public.nope"),
        (("public.articles", "id", "nope"), "has no column 'nope' (check --fingerprint-column"),
        (
            ("public.articles", "id", "fp", None, None, SimhashSpec(covering=True)),
            "B-trees that carry the fingerprint are made in simdb's own tables only",
        ),
    ]
    for arguments, message in cases:
        with pytest.raises(InvalidParameter, match=message.replace("(", r"\(")):
            app_column.attach_in_table(articles, "arts", *arguments)  # type: ignore[arg-type]
        assert articles.execute("SELECT to_regclass('simdb.arts')").fetchone() == (None,)
    with pytest.raises(InvalidParameter, match="--signature-column does not apply to a simhash index"):
        app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", sketch_kind="signature")


def test_an_index_in_the_application_table_is_planned_on_btrees_of_the_prefix_alone(articles: Conn) -> None:
    """Where simdb's own table would get B-trees that carry the fingerprint (100M expected rows),
    an application's column gets the best design on the prefix alone, as its migrations make them."""
    rows = 100_000_000
    assert SimhashSpec().for_column().build("own", DEFAULT_FEATURES, rows).covering
    made = app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", expected_rows=rows)
    assert isinstance(made, SimhashIndex) and not made.covering
    best = planner.design_for(
        rows, made.plan.max_distance, memory=planner.machine_memory(), coverings=(False,)
    )
    assert made.plan == best.plan


def test_attach_refuses_a_btree_name_the_table_has_and_leaves_it_alone(articles: Conn) -> None:
    """The application's own index that happens to bear one of simdb's names stays (the clean-up
    after a failed CREATE INDEX used to drop it by name)."""
    articles.execute("CREATE INDEX simdb_arts_key ON public.articles (lang)")
    before = _objects(articles)
    with pytest.raises(InvalidParameter, match=r"named as public\.simdb_arts_key, which exists already"):
        app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    assert _objects(articles) == before
    assert articles.execute("SELECT to_regclass('simdb.arts')").fetchone() == (None,)


def test_jaccard_in_table_with_a_where_condition(articles: Conn) -> None:
    articles.execute("ALTER TABLE public.articles ADD COLUMN sig bigint[]")
    spec = JaccardSpec(threshold=0.5)
    made = app_column.attach_in_table(
        articles, "arts", "public.articles", "id", "sig", "body", "lang = 'en'", spec
    )
    assert keep.sync(articles, "arts").as_dict() == {"filled": 3, "empty": 0}
    articles.execute("UPDATE public.articles SET lang = 'de' WHERE id = 2")
    found = query.near(articles, made, made.sketch(BODY))
    assert [match.key for match in found] == ["1"]  # row 2 no longer meets the condition


def test_cli_attach_json_and_list(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    code, out, _ = simdb(
        capsys,
        "attach", "arts", "--table", "public.articles", "--key-column", "id",
        "--fingerprint-column", "fp", "--no-sync", "--json",
    )  # fmt: skip
    assert code == 0
    shown = json.loads(out.splitlines()[0])
    assert {
        key: shown[key] for key in ("storage", "table", "key_column", "sketch_column", "text_column")
    } == {
        "storage": "column",
        "table": "public.articles",
        "key_column": "id",
        "sketch_column": "fp",
        "text_column": None,
    }
    assert simdb(capsys, "sync", "arts") == (
        0,
        "index arts has no text column: the application writes its sketches\n",
        "",
    )
    code, _, err = simdb(capsys, "attach", "x", "--table", "public.articles", "--key-column", "id")
    assert (code, err.splitlines()[-1]) == (
        2,
        "Error: give --text-column, or --fingerprint-column/--signature-column",
    )


def test_status_says_what_a_sync_would_fill(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    """Not the side table's "without triggers: each sync compares the whole table"."""
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    articles.execute("UPDATE public.articles SET body = '' WHERE id = 3")  # no words: stays unfilled
    assert simdb(capsys, "status", "arts") == (
        0,
        "index arts lives in public.articles.fp: 3 rows with text have none yet (`simdb sync arts`"
        " fills them), 0 whose text has no words stay without one (as the last sync found them);"
        " last synced never\n",
        "",
    )
    keep.sync(articles, "arts")  # fills 2, finds row 3 without words: not pending, and synced
    code, out, _ = simdb(capsys, "status", "arts", "--json")
    shown = json.loads(out)
    synced = articles.execute("SELECT synced_at FROM simdb._sources WHERE index_name = 'arts'").fetchone()
    assert synced is not None and synced[0] is not None
    assert (code, shown["capture"], shown["table"], shown["pending"], shown["wordless"]) == (
        0,
        "column",
        "public.articles.fp",
        0,
        1,
    )
    assert shown["synced_at"] == synced[0].isoformat()
    code, out, _ = simdb(capsys, "status", "arts")
    assert (code, out) == (
        0,
        "index arts lives in public.articles.fp: 0 rows with text have none yet (`simdb sync arts`"
        " fills them), 1 whose text has no words stay without one (as the last sync found them);"
        f" last synced {synced[0].isoformat(timespec='seconds')}\n",
    )
    articles.execute("DELETE FROM public.articles WHERE id = 3")
    keep.sync(articles, "arts")  # (reads nothing, and records that no row is without words now)
    articles.execute("UPDATE public.articles SET body = 'new words' WHERE id = 1")
    assert {k: v for k, v in json.loads(simdb(capsys, "status", "arts", "--json")[1]).items() if k in (
        "pending", "wordless")} == {"pending": 1, "wordless": 0}  # fmt: skip
    app_column.attach_in_table(articles, "bare", "public.articles", "id", "fp")
    assert simdb(capsys, "status", "bare") == (
        0,
        "index bare lives in public.articles.fp, which the application writes: each write is"
        " searchable in its own transaction (nothing to sync)\n",
        "",
    )


def test_sync_after_a_renamed_column_or_table_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    made = app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    fix = "(rename it back, or drop the index (`simdb drop arts`) and attach it to the table as it is now)"
    for rename, back, gone in [
        (
            "articles RENAME COLUMN body TO content",
            "articles RENAME COLUMN content TO body",
            "reads column 'body'",
        ),
        ("articles RENAME COLUMN fp TO sketch", "articles RENAME COLUMN sketch TO fp", "reads column 'fp'"),
        ("articles RENAME TO posts", "posts RENAME TO articles", "is in table"),
    ]:
        articles.execute(f"ALTER TABLE public.{rename}")
        code, _, err = simdb(capsys, "sync", "arts")
        where = f"{gone} of public.articles" if "column" in gone else f"{gone} public.articles"
        assert (code, err) == (1, f"simdb: error: index 'arts' {where}, which is gone (renamed?) {fix}\n")
        with pytest.raises(IndexMismatch, match="which is gone"):
            app_column.refill(articles, made, made.storage)  # type: ignore[arg-type]
        articles.execute(f"ALTER TABLE public.{back}")
    assert keep.sync(articles, "arts").as_dict() == {"filled": 3, "empty": 0}


def test_cli_refuses_side_table_options_before_it_makes_the_schema(
    capsys: pytest.CaptureFixture[str], empty_db: str
) -> None:
    code, _, err = simdb(
        capsys,
        "--dsn", empty_db, "attach", "arts", "--table", "public.articles", "--key-column", "id",
        "--fingerprint-column", "fp", "--no-triggers",
    )  # fmt: skip
    assert (code, err.splitlines()[-1]) == (
        2,
        "Error: --cascade and --no-triggers are for a side table: an index in your table has no rows of its own",
    )
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regnamespace('simdb')").fetchone() == (None,)


def test_a_granted_role_queries_an_index_in_the_table_and_cannot_write_the_table_through_it(
    articles: Conn, dsn: str
) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body", spec=SimhashSpec())
    keep.sync(articles, "arts")
    role = "simdb_intable_reader"
    articles.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
    articles.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    try:
        index.grant(articles, "arts", role, writer=True)
        with psycopg.connect(dsn, autocommit=True) as session:
            session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            assert _near(session, "1")[0] == ("1", 0)
            assert index.get(session, "arts").storage.kind == "column"
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the view would pass it on
                session.execute("DELETE FROM simdb.arts")
    finally:
        articles.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        articles.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_reindex_moves_the_column_to_the_newest_spec(articles: Conn) -> None:
    app_column.attach_in_table(
        articles, "arts", "public.articles", "id", "fp", "body", spec=SimhashSpec(fingerprint_spec=1)
    )
    keep.sync(articles, "arts")
    assert _fingerprints(articles)[1] == to_signed(fingerprint(BODY, spec=1))
    report = keep.reindex(articles, "arts")
    assert (report.from_version, report.to_version, report.rows) == (1, 2, 3)
    assert _fingerprints(articles) == {
        1: to_signed(fingerprint(BODY)),
        2: to_signed(fingerprint(BODY + " extra")),
        3: to_signed(fingerprint(OTHER)),
        4: None,
    }
    assert index.get(articles, "arts").spec_version == 2
    app_column.attach_in_table(
        articles, "bare", "public.articles", "id", "fp", spec=SimhashSpec(fingerprint_spec=1)
    )
    with pytest.raises(InvalidParameter, match="index 'bare' has no text column: the application writes"):
        keep.reindex(articles, "bare")


def test_fill_in_pages_with_threads_writes_each_rows_own_fingerprint(
    articles: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [
        f"{BODY} variant {number} " + " ".join(f"x{number}y{i}" for i in range(number)) for number in range(9)
    ]
    articles.cursor().executemany(
        "INSERT INTO public.articles (body) VALUES (%s)", [(text,) for text in texts]
    )
    made = app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    monkeypatch.setattr(app_column, "BATCH", 2)  # pages of 2 rows, sketched by 2 threads
    assert app_column.fill(articles, made, made.storage, jobs=2).as_dict() == {"filled": 12, "empty": 0}  # type: ignore[arg-type]
    bodies = dict(articles.execute("SELECT id, body FROM public.articles").fetchall())  # type: ignore[arg-type]
    expected = {key: None if body is None else to_signed(fingerprint(body)) for key, body in bodies.items()}
    assert _fingerprints(articles) == expected


def test_renaming_the_fingerprint_column_never_fails_the_applications_writes(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    keep.sync(articles, "arts")
    articles.execute("ALTER TABLE public.articles RENAME COLUMN fp TO fingerprint")
    articles.execute("UPDATE public.articles SET body = %s WHERE id = 1", (OTHER,))  # the trigger clears it
    assert articles.execute("SELECT fingerprint FROM public.articles WHERE id = 1").fetchone() == (None,)
    code, _, err = simdb(capsys, "sync", "arts")
    assert code == 1 and "reads column 'fp' of public.articles, which is gone (renamed?)" in err
    assert simdb(capsys, "drop", "arts", "--yes")[0] == 0


def test_sync_full_sketches_every_row_again_as_a_repair(articles: Conn) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    keep.sync(articles, "arts")
    articles.execute("ALTER TABLE public.articles DISABLE TRIGGER USER")  # a write that bypassed them
    articles.execute("UPDATE public.articles SET body = %s WHERE id = 2", (OTHER,))
    articles.execute("ALTER TABLE public.articles ENABLE TRIGGER USER")
    assert keep.sync(articles, "arts").as_dict() == {"filled": 0, "empty": 0}  # nothing NULL: not seen
    before = _row_versions(articles)
    assert keep.sync(articles, "arts", full=True).as_dict() == {
        "filled": 1,
        "empty": 0,
        "unchanged": 2,
        "cleared": 0,
    }
    assert _fingerprints(articles)[2] == to_signed(fingerprint(OTHER))
    after = _row_versions(articles)
    assert [key for key in before if after[key] != before[key]] == [2]  # the others were not rewritten


def test_a_reader_cannot_sync_and_distribute_is_refused(articles: Conn, dsn: str) -> None:
    app_column.attach_in_table(articles, "arts", "public.articles", "id", "fp", "body")
    role = "simdb_intable_only_reader"
    articles.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
    articles.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    try:
        index.grant(articles, "arts", role)
        articles.execute(sql.SQL("GRANT SELECT ON public.articles TO {}").format(sql.Identifier(role)))
        with psycopg.connect(dsn, autocommit=True) as session:
            session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            with pytest.raises(SimdbError, match=f"role {role} may not sync index 'arts': a sync writes"):
                keep.sync(session, "arts")
    finally:
        articles.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        articles.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    with pytest.raises(InvalidParameter, match="index 'arts' lives in an application's table"):
        index.distribute(articles, "arts", Distributed())


def test_a_first_fill_builds_the_deferred_btrees_once_at_its_end(articles: Conn) -> None:
    made = app_column.attach_in_table(
        articles, "arts", "public.articles", "id", "fp", "body", defer_btrees=True
    )
    btrees = {f"index simdb_arts_p{number}" for number in range(len(made.columns))}
    assert not btrees & _objects(articles)
    keep.sync(articles, "arts")
    assert btrees <= _objects(articles)
    assert _near(articles, "1")[0] == ("1", 0)


def _row_versions(conn: Conn) -> dict[int, tuple[str, str]]:
    """Each row's (ctid, xmin): both change when the row is rewritten."""
    rows = conn.execute("SELECT id, ctid::text, xmin::text FROM public.articles ORDER BY id").fetchall()
    return {int(key): (str(ctid), str(xmin)) for key, ctid, xmin in rows}  # type: ignore[call-overload]


def test_attaching_again_checks_the_sketches_the_column_holds_and_rewrites_only_stale_ones(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """Sketches written before this attach (by an earlier one, dropped since) are checked against
    their text at the first sync: a stale one is replaced or cleared, a current one left unwritten."""
    options = ("--table", "public.articles", "--key-column", "id", "--fingerprint-column", "fp")
    assert simdb(capsys, "attach", "arts", *options, "--text-column", "body")[0] == 0
    assert simdb(capsys, "drop", "arts", "--yes")[0] == 0
    articles.execute("UPDATE public.articles SET body = %s WHERE id = 1", (OTHER + " changed",))
    articles.execute("UPDATE public.articles SET body = NULL WHERE id = 3")
    articles.execute("INSERT INTO public.articles (id, body, fp) VALUES (5, '', 7), (6, %s, NULL)", (BODY,))
    before = _row_versions(articles)
    code, out, err = simdb(capsys, "attach", "arts", *options, "--text-column", "body", "--no-sync")
    assert (code, err) == (0, "")
    assert simdb(capsys, "status", "arts") == (
        0,
        "index arts lives in public.articles.fp: 1 rows with text have none yet, and 4 sketches"
        " it held when attached are not checked against their text yet (`simdb sync arts` fills"
        " and checks them), 0 whose text has no words stay without one (as the last sync found"
        " them); last synced never\n",
        "",
    )
    assert simdb(capsys, "sync", "arts") == (
        0,
        "synced: 2 sketches filled or replaced, 2 stale sketches cleared, 1 rows whose text has no"
        " words (left without one); 1 rows whose sketch matched their text were not rewritten\n",
        "",
    )
    assert _fingerprints(articles) == {  # (`simdb attach` makes a one-bit MinHash index)
        1: to_signed(fingerprint(OTHER + " changed", spec=3)),
        2: to_signed(fingerprint(BODY + " extra", spec=3)),
        3: None,
        4: None,
        5: None,
        6: to_signed(fingerprint(BODY, spec=3)),
    }
    after = _row_versions(articles)
    assert after[2] == before[2] and after[4] == before[4]  # unchanged rows: not rewritten
    assert all(after[key] != before[key] for key in (1, 3, 5, 6))
    code, out, _ = simdb(capsys, "status", "arts", "--json")
    shown = json.loads(out)
    assert (code, shown["pending"], shown["unchecked"], shown["wordless"]) == (0, 0, 0, 1)  # row 5: no words
    assert keep.sync(articles, "arts").as_dict() == {"filled": 0, "empty": 1}  # checked once, not again
