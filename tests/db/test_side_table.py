"""attach + sync over a table made with plain SQL: inserts, updates and deletes are reflected."""

from __future__ import annotations

import hashlib
import threading
import uuid
from pathlib import Path

import psycopg
import pytest
from support import Conn, simdb

from simdb import api, fingerprint, ingest, schema
from simdb.errors import InvalidParameter
from simdb.follow import app_column, keep, side
from simdb.index import lifecycle as index
from simdb.sketch.bits import to_unsigned
from simdb.sketch.features import EmptyDocument, Features
from simdb.sketch.simhash import fingerprint_bytes

BODY = " ".join(f"word{i} topic{i % 11}" for i in range(300))
COLUMNS = (
    "SELECT column_name, data_type FROM information_schema.columns"
    " WHERE table_name = 'articles' ORDER BY ordinal_position"
)


@pytest.fixture
def articles(conn: Conn) -> Conn:
    conn.execute(
        "CREATE TABLE public.articles (id serial PRIMARY KEY, body text, published boolean NOT NULL)"
    )
    conn.execute(
        "INSERT INTO public.articles (body, published) VALUES (%s, true), (%s, true), (%s, true), (%s, false), (NULL, true)",
        (BODY, BODY + " extra", "something else entirely, about other things", BODY),
    )
    return conn


def keys(conn: Conn) -> list[str]:
    return [str(key) for (key,) in conn.execute("SELECT key FROM simdb.arts ORDER BY key")]


def test_attach_sync_reflects_inserts_updates_deletes(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    conn = articles
    before = conn.execute(COLUMNS).fetchall()
    code, out, err = simdb(
        capsys,
        "attach",
        "arts",
        "--table",
        "public.articles",
        "--key-column",
        "id",
        "--text-column",
        "body",
        "--cascade",
        "--no-triggers",
    )
    assert code == 0, err
    assert out.splitlines()[1] == (
        "synced: 4 new, 0 updated, 0 removed, 1 without text (not indexed); unchanged rows were compared by hash, not fingerprinted"
    )
    assert keys(conn) == ["1", "2", "3", "4"]
    near = conn.execute("SELECT key FROM simdb.near_key('arts', '1')").fetchall()
    assert near[0] == ("1",) and {("2",), ("4",)} <= set(near) and ("3",) not in near

    conn.execute("INSERT INTO public.articles (body, published) VALUES (%s, true)", (BODY + " again",))
    conn.execute("UPDATE public.articles SET body = 'a rewritten article about gardens' WHERE id = 2")
    conn.execute("DELETE FROM public.articles WHERE id = 3")
    assert keys(conn) == ["1", "2", "4"]  # the key is the primary key: the row went with its source row
    assert simdb(capsys, "sync", "arts")[1] == (
        "synced: 1 new, 1 updated, 0 removed, 1 without text (not indexed); unchanged rows were compared by hash, not fingerprinted\n"
    )
    assert keys(conn) == ["1", "2", "4", "6"]
    assert ("2",) not in conn.execute("SELECT key FROM simdb.near_key('arts', '1')").fetchall()
    assert simdb(capsys, "sync", "arts", "--json")[1] == (
        '{"added": 0, "updated": 0, "unchanged": 0, "removed": 0, "empty": 1}\n'
    )
    assert conn.execute(COLUMNS).fetchall() == before  # the user's table is not altered


def test_where_condition_and_a_table_without_unique_key(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    conn.execute("CREATE TABLE public.notes (ref text, body text, live boolean)")
    conn.execute(
        "INSERT INTO public.notes VALUES ('a', 'first note text here', true), ('b', 'second note', false)"
    )
    code, out, _ = simdb(
        capsys,
        "attach",
        "notes",
        "--table",
        "notes",
        "--key-column",
        "ref",
        "--text-column",
        "body",
        "--where",
        "live",
    )
    assert code == 0 and out.splitlines()[1].startswith("synced: 1 new, 0 updated, 0 removed")
    conn.execute("UPDATE public.notes SET live = NOT live")
    assert simdb(capsys, "sync", "notes")[1].startswith("synced: 1 new, 0 updated, 1 removed")
    assert [key for (key,) in conn.execute("SELECT key FROM simdb.notes")] == ["b"]


def test_attach_errors(capsys: pytest.CaptureFixture[str], articles: Conn) -> None:
    base = ("attach", "arts", "--key-column", "id", "--text-column", "body")
    assert simdb(capsys, *base, "--table", "public.nope")[2] == (
        "simdb: error: no table public.nope (check --table (SCHEMA.TABLE))\n"
    )
    assert simdb(
        capsys, "attach", "arts", "--table", "articles", "--key-column", "uid", "--text-column", "body"
    )[2] == (
        "simdb: error: table public.articles has no column 'uid' (check --key-column and --text-column)\n"
    )
    code, _, err = simdb(capsys, *base, "--table", "articles", "--where", "no_such_column > 1")
    assert code == 1 and err.startswith(
        "simdb: error: the --where condition does not work on public.articles: "
    )
    assert simdb(capsys, "sync", "arts")[2] == (
        "simdb: error: no index named 'arts' (check the name and the database: `simdb list` shows the indexes there)\n"
    )
    simdb(capsys, "create", "plain")
    assert simdb(capsys, "sync", "plain")[2] == (
        "simdb: error: index 'plain' is not attached to a table (attach one with `simdb attach NAME --table ...`)\n"
    )


def test_sync_while_the_application_writes(dsn: str, conn: Conn) -> None:
    conn.execute("CREATE TABLE public.posts (id int PRIMARY KEY, body text NOT NULL)")
    conn.execute(
        "INSERT INTO public.posts SELECT n, 'post number ' || n || ' with words' FROM generate_series(1, 3000) AS n"
    )
    made = keep.attach(conn, "posts", "public.posts", "id", "body")
    stop = threading.Event()

    def application() -> None:
        with psycopg.connect(dsn, autocommit=True) as app:
            n = 3000
            while not stop.is_set():
                n += 1
                app.execute("INSERT INTO public.posts VALUES (%s, %s)", (n, f"new post {n} text"))
                app.execute("UPDATE public.posts SET body = body || ' edited' WHERE id = %s", (n % 3000 + 1,))
                app.execute("DELETE FROM public.posts WHERE id = %s", (n - 2500,))

    writer = threading.Thread(target=application)
    writer.start()
    try:
        for _ in range(3):
            keep.sync(conn, "posts")
    finally:
        stop.set()
        writer.join()
    keep.sync(conn, "posts")  # once the application is quiet, one more sync makes it exact
    source = {str(key): body for key, body in conn.execute("SELECT id, body FROM public.posts")}
    stored = {
        key: to_unsigned(value) for key, value in conn.execute("SELECT key, fingerprint FROM simdb.posts")
    }
    assert stored == {key: fingerprint(body, made.features) for key, body in source.items()}


def test_watch_polls(conn: Conn) -> None:
    conn.execute("CREATE TABLE public.feed (id int PRIMARY KEY, body text NOT NULL)")
    conn.execute("INSERT INTO public.feed VALUES (1, 'first item in the feed')")
    keep.attach(conn, "feed", "feed", "id", "body")
    seen: list[side.SyncReport] = []

    def record(report: side.SyncReport) -> None:
        seen.append(report)
        conn.execute("INSERT INTO public.feed VALUES (%s, 'another item, arriving later')", (len(seen) + 1,))

    keep.watch(conn, "feed", 0.1, record, rounds=3)
    assert [report.added for report in seen] == [1, 1, 1]


def test_bytes_features_over_an_attached_table(conn: Conn) -> None:
    conn.execute("CREATE TABLE public.blobs (id int PRIMARY KEY, body text NOT NULL)")
    conn.execute("INSERT INTO public.blobs VALUES (1, 'some bytes, café'), (2, '...')")
    keep.attach(conn, "blobs", "blobs", "id", "body", features=Features("bytes", 4))
    assert keep.sync(conn, "blobs").added == 2  # '...' has bytes, though no word characters
    stored = dict(conn.execute("SELECT key, fingerprint FROM simdb.blobs").fetchall())
    assert to_unsigned(stored["1"]) == fingerprint_bytes("some bytes, café".encode(), 4)
    assert to_unsigned(stored["2"]) == fingerprint_bytes(b"...", 4)


def test_without_cascade_nothing_stands_in_the_way_of_the_users_table(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """Attach adds no foreign key unless asked (--cascade), so TRUNCATE and DROP
    of the source table work, and sync removes what went; --cascade refuses a non-unique key."""
    conn = articles
    args = ["--table", "public.articles", "--text-column", "body", "--no-triggers"]
    assert simdb(capsys, "attach", "arts", *args, "--key-column", "id")[0] == 0
    assert keys(conn) == ["1", "2", "3", "4"]
    conn.execute("TRUNCATE public.articles")
    assert simdb(capsys, "sync", "arts")[1].startswith("synced: 0 new, 0 updated, 4 removed")
    assert keys(conn) == []
    conn.execute("DROP TABLE public.articles")
    assert simdb(capsys, "drop", "arts", "--yes")[0] == 0
    conn.execute("CREATE TABLE public.loose (ref text, body text)")
    code, _, err = simdb(
        capsys,
        "attach",
        "loose",
        "--table",
        "public.loose",
        "--key-column",
        "ref",
        "--text-column",
        "body",
        "--cascade",
    )
    assert code == 1 and "--cascade needs a primary or unique key column" in err
    assert conn.execute("SELECT to_regclass('simdb.loose')").fetchone() == (None,)  # nothing left behind


def _nothing_named(conn: Conn, name: str) -> bool:
    """No index table and no catalog row: a refused attach left nothing behind."""
    table = conn.execute("SELECT to_regclass(%s)", (f"simdb.{name}",)).fetchone()
    listed = conn.execute("SELECT count(*) FROM simdb._indexes WHERE name = %s", (name,)).fetchone()
    return table == (None,) and listed == (0,)


def test_a_bad_attach_is_refused_before_anything_is_created(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    """A text column that is not text, or a --where that reaches outside its
    place, is refused up front (also with --no-sync); a corrected attach then works."""
    conn.execute("CREATE TABLE public.docs (id int PRIMARY KEY, n int, meta jsonb, body varchar(200))")
    conn.execute("INSERT INTO public.docs VALUES (1, 7, '{}', 'one text here'), (2, 8, '{}', 'another')")
    base = ["attach", "d", "--table", "docs", "--key-column", "id"]
    for column, kind in (("n", "integer"), ("meta", "jsonb")):
        code, out, err = simdb(capsys, *base, "--text-column", column, "--no-sync")
        assert code == 1 and out == "", err
        assert err == (
            f"simdb: error: --text-column {column!r} of public.docs is {kind}, not text"
            " (give a text or varchar column (a view can cast another type with ::text))\n"
        )
        assert _nothing_named(conn, "d")
    for condition, why in (
        ("id < 100) OR (true", "it closes a parenthesis it did not open"),
        ("true; DROP TABLE docs", "';' is not allowed in it"),
        ("id > 0 --", "'--' is not allowed in it"),
        ("body = 'open", "a ' quote in it is not closed"),
    ):
        code, _, err = simdb(capsys, *base, "--text-column", "body", "--where", condition)
        assert code == 1 and f"is refused: {why}" in err, err
        assert _nothing_named(conn, "d")
    # a condition naming a column both tables have (`key`-like names) runs in the table's own scope
    conn.execute("ALTER TABLE public.docs ADD COLUMN key text DEFAULT 'k'")
    code, out, err = simdb(capsys, *base, "--text-column", "body", "--where", "(id < 100) OR (key = 'x')")
    assert code == 0 and out.splitlines()[1].startswith("synced: 2 new"), err
    assert simdb(capsys, "sync", "d")[1].startswith("synced: 0 new, 0 updated, 0 removed")


def test_a_key_column_that_is_not_unique_is_refused(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    """Rows sharing a key would merge into one index row (and sync would report
    them updated forever): attach refuses such a column, and sync says so when duplicates appear."""
    conn.execute("CREATE TABLE public.notes (ref text, body text)")
    conn.execute("INSERT INTO public.notes VALUES ('a', 'first note'), ('a', 'second note'), ('b', 'x y z')")
    attach_notes = ["attach", "notes", "--table", "notes", "--key-column", "ref", "--text-column", "body"]
    attach_notes.append("--no-triggers")  # (with triggers, the shared key stays queued: test_capture)
    code, _, err = simdb(capsys, *attach_notes)
    assert code == 1 and err == (
        "simdb: error: key column 'ref' of public.notes is not unique: more than one row has 'a', and"
        " simdb keeps one index row per key (give a unique --key-column (a primary key), or a --where"
        " that keeps one row per key)\n"
    )
    assert _nothing_named(conn, "notes")
    conn.execute("DELETE FROM public.notes WHERE body = 'second note'")
    assert simdb(capsys, *attach_notes)[0] == 0
    conn.execute("INSERT INTO public.notes VALUES ('b', 'a different note')")
    code, _, err = simdb(capsys, "sync", "notes")
    assert code == 1 and "key column 'ref' of public.notes is not unique: more than one row has 'b'" in err
    assert sorted(key for (key,) in conn.execute("SELECT key FROM simdb.notes")) == ["a", "b"]


@pytest.mark.parametrize("triggers", [True, False])
@pytest.mark.parametrize("emptied", [None, "", "... !!! ..."])
def test_a_row_whose_text_is_emptied_leaves_the_index(
    articles: Conn, emptied: str | None, triggers: bool
) -> None:
    """After `SET body = NULL` (or '', or no words) a sync skipped the row, and it
    kept its old fingerprint for good: a query by that text still found it at distance 0."""
    keep.attach(articles, "arts", "public.articles", "id", "body", triggers=triggers)
    assert keep.sync(articles, "arts").empty == 1  # the row inserted with a NULL body
    keys = "SELECT key FROM simdb.arts ORDER BY key"
    assert [row[0] for row in articles.execute(keys)] == ["1", "2", "3", "4"]
    articles.execute("UPDATE public.articles SET body = %s WHERE id = 1", (emptied,))
    report = keep.sync(articles, "arts")
    # (a full compare counts the NULL row of the fixture again; the queue holds only row 1)
    assert (report.empty, report.updated, report.removed) == (1 if triggers else 2, 0, 0)
    assert [row[0] for row in articles.execute(keys)] == ["2", "3", "4"]
    found = articles.execute(
        "SELECT key FROM simdb.near('arts', %s::bigint, 0)",
        (fingerprint(BODY) - (1 << 64) * (fingerprint(BODY) >> 63),),
    ).fetchall()
    assert found == [("4",)]  # the same text, still in the table; no longer row 1


def test_a_where_condition_may_look_at_its_row_alone(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """`--where "(SELECT count(*) FROM other_table) > 0"` was accepted, though
    the condition is documented to run on the table alone."""
    articles.execute("CREATE TABLE public.other_table (x int)")
    base = ("attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")
    for condition, reason in (
        ("(SELECT count(*) FROM other_table) > 0", "cannot use subquery"),
        ("id IN (SELECT x FROM other_table)", "cannot use subquery"),
        ("EXISTS (SELECT 1 FROM other_table AS o WHERE o.x = articles.id)", "cannot use subquery"),
    ):
        code, out, err = simdb(capsys, *base, "--where", condition)
        assert (code, out) == (1, "") and err == (
            f"simdb: error: the --where condition {condition!r} must look at one row of public.articles "
            f"alone: {reason} (use the table's own columns, e.g. \"published AND lang = 'en'\")\n"
        ), err
    assert articles.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)
    assert articles.execute("SELECT to_regclass('pg_temp.articles')").fetchone() == (None,)
    assert (
        simdb(capsys, *base, "--where", "articles.published AND length(body) > now()::date - now()::date")[0]
        == 0
    )
    assert articles.execute("SELECT count(*) FROM simdb.arts").fetchone() == (3,)  # (published, with text)


def test_a_where_condition_that_calls_a_volatile_function_is_refused(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """A condition run on every row at each sync must give the same answer for the same row and
    change nothing: pg_sleep hung attach, set_config changed the session. Refused before anything
    is made, for a side table and for an index in the table; stable functions (now()) are fine."""
    articles.execute("ALTER TABLE public.articles ADD COLUMN fp bigint")
    side = ("attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")
    in_table = (*side, "--fingerprint-column", "fp")
    hint = (
        "(use the row's columns and immutable or stable functions, e.g. \"published AND lang = 'en'\";"
        " a function of your own may be declared STABLE)"
    )
    for command, condition, called in (
        (side, "pg_sleep(1) IS NOT NULL", "pg_sleep"),
        (side, "published AND set_config('simdb.x', body, false) <> ''", "set_config"),
        (in_table, "random() < 0.5 OR published", "random"),
        (in_table, "id <> nextval('articles_id_seq') AND published", "nextval"),
    ):
        code, out, err = simdb(capsys, *command, "--where", condition)
        assert (code, out, err) == (
            1,
            "",
            f"simdb: error: the --where condition {condition!r} calls {called}(), which is volatile:"
            f" it may answer otherwise for the same row, or change something {hint}\n",
        )
        assert _nothing_named(articles, "arts")
    assert articles.execute("SELECT last_value FROM articles_id_seq").fetchone() == (5,)
    assert simdb(capsys, *side, "--where", "published AND now() > '2000-01-01'")[0] == 0
    assert keys(articles) == ["1", "2", "3"]


def test_an_attach_whose_first_sync_fails_leaves_nothing(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """A --where condition that fails on one row (here row 3) fails attach's first sync: the index
    is dropped again, for a side table and for an index in the table (its triggers and B-trees)."""
    articles.execute("ALTER TABLE public.articles ADD COLUMN fp bigint")
    triggers = "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.articles'::regclass"
    btrees = "SELECT count(*) FROM pg_indexes WHERE tablename = 'articles'"
    before = articles.execute(triggers).fetchone(), articles.execute(btrees).fetchone()
    side = ("attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")
    condition = "100 / (id - 3) <> 0"
    for command in (side, (*side, "--fingerprint-column", "fp")):
        code, _, err = simdb(capsys, *command, "--where", condition)
        assert (code, err) == (
            1,
            "simdb: error: the first sync of index 'arts' failed, so the index was dropped again:"
            " division by zero (fix what failed (a --where condition that fails on some row?), then"
            " attach again)\n",
        )
        assert _nothing_named(articles, "arts")
        assert (articles.execute(triggers).fetchone(), articles.execute(btrees).fetchone()) == before


def test_a_sync_after_the_table_or_a_column_went_says_so_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], articles: Conn
) -> None:
    """A renamed text column or a dropped table gave PostgreSQL's raw error."""
    assert (
        simdb(capsys, "attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")[
            0
        ]
        == 0
    )
    rows = "SELECT key, fingerprint FROM simdb.arts ORDER BY key"
    before = articles.execute(rows).fetchall()
    again = "(drop the index (`simdb drop arts`) and attach it to the table as it is now)"
    articles.execute("ALTER TABLE public.articles RENAME COLUMN body TO text_body")
    assert simdb(capsys, "sync", "arts") == (
        1,
        "",
        f"simdb: error: index 'arts' follows column 'body' of public.articles, which is gone (renamed or dropped) {again}\n",
    )
    articles.execute("DROP TABLE public.articles")
    assert simdb(capsys, "sync", "arts") == (
        1,
        "",
        f"simdb: error: index 'arts' follows table public.articles, which no longer exists {again}\n",
    )
    assert articles.execute(rows).fetchall() == before
    assert simdb(capsys, "drop", "arts", "--yes")[0] == 0


def _stored_rows(conn: Conn, name: str) -> dict[str, tuple[object, ...]]:
    """key -> (fingerprint, content_hash, size, extension, mtime_ns), as stored."""
    statement = f"SELECT key, fingerprint, content_hash, size, extension, mtime_ns FROM simdb.{name}"
    return {
        key: (to_unsigned(value), bytes(digest), *rest)
        for key, value, digest, *rest in conn.execute(statement)
    }


def _expected_rows(conn: Conn, statement: str) -> dict[str, tuple[object, ...]]:
    """What a sync stores for the (key as text, body) rows `statement` selects: the row-by-row truth."""
    expected = {}
    for key, body in conn.execute(statement):
        if body and fingerprint_or_none(body) is not None:
            expected[key] = (
                fingerprint(body),
                hashlib.md5(body.encode()).digest(),
                len(body.encode()),
                None,
                None,
            )
    return expected


def fingerprint_or_none(body: str) -> int | None:
    try:
        return fingerprint(body)
    except EmptyDocument:
        return None


WORDS = "b|B|a b|ä|Z|10|9|a|ab|a-b|é|zz|x y z|-|c|C".split("|")  # noqa: SIM905 (keys with spaces)
KEY_TYPES = {  # column type -> keys, in an order that is not the table's
    "int PRIMARY KEY": [str(n) for n in (17, 3, -5, 1000, 0, 42, 8, 99, 7, 12, 64, 31, 2, 5, 77, 6, 300)],
    "text PRIMARY KEY": WORDS,
    'text COLLATE "C" PRIMARY KEY': WORDS,
    "uuid PRIMARY KEY": [str(uuid.UUID(int=n * 0x1_0000_0001_0001)) for n in (9, 1, 5, 3, 8, 2, 7, 4, 6, 11)],
    "numeric(8, 2) UNIQUE": [f"{n / 100:.2f}" for n in (150, -325, 10000, 1, 200, 1010, 333, 0, 777, 880)],
    "int": [str(n) for n in (4, 1, 3, 2, 9, 8, 7, 6, 5, 10, 12, 11)],  # no B-tree on the key: one snapshot
}


@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_a_fill_in_pages_stores_what_reading_every_row_gives(
    conn: Conn, monkeypatch: pytest.MonkeyPatch, key_type: str
) -> None:
    """The first fill reads the table page by page by its key (no snapshot held,
    no temporary files) and sketches on several threads; what it stores is each row's own
    fingerprint, MD5 and size, whatever the key's type and collation, across page boundaries."""
    conn.execute(f"CREATE TABLE public.pages (id {key_type}, body text, live boolean NOT NULL)")
    for number, key in enumerate(KEY_TYPES[key_type]):
        body = [None, "", "... !!! ...", BODY][number % 4] if number % 5 == 1 else f"{BODY} variant {number}"
        conn.execute("INSERT INTO public.pages VALUES (%s, %s, %s)", (key, body, number % 7 != 3))
    monkeypatch.setattr(side, "BATCH", 3)
    keep.attach(conn, "pages", "public.pages", "id", "body", "live")
    report = keep.sync(conn, "pages", jobs=2)
    expected = _expected_rows(conn, "SELECT id::text, body FROM public.pages WHERE live")
    assert _stored_rows(conn, "pages") == expected
    live = conn.execute("SELECT count(*) FROM public.pages WHERE live").fetchone()
    assert (report.added, report.empty) == (len(expected), live[0] - len(expected) if live else -1)
    conn.execute("UPDATE public.pages SET body = body || ' more' WHERE body <> ''")
    conn.execute("UPDATE public.pages SET live = NOT live")
    keep.sync(conn, "pages", jobs=2)
    assert _stored_rows(conn, "pages") == _expected_rows(
        conn, "SELECT id::text, body FROM public.pages WHERE live"
    )


def test_rows_deleted_and_inserted_during_a_fill_leave_it_exact(
    conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page is its own statement: a row deleted ahead is not read, one deleted behind is
    removed at the end, one inserted ahead is read."""
    conn.execute("CREATE TABLE public.posts (id int PRIMARY KEY, body text NOT NULL)")
    conn.execute(
        "INSERT INTO public.posts SELECT n, %s || n FROM generate_series(1, 30) AS n", (BODY + " post ",)
    )
    monkeypatch.setattr(side, "BATCH", 5)
    keep.attach(conn, "posts", "public.posts", "id", "body")
    calls = []

    def meanwhile(rows: int) -> None:
        if not calls:
            conn.execute("DELETE FROM public.posts WHERE id IN (2, 20)")
            conn.execute("INSERT INTO public.posts VALUES (100, %s)", (BODY + " late",))
        calls.append(rows)

    report = keep.sync(conn, "posts", meanwhile)
    assert (report.added, report.removed, sum(calls)) == (30, 1, 30)
    assert _stored_rows(conn, "posts") == _expected_rows(conn, "SELECT id::text, body FROM public.posts")


def test_a_fill_writes_no_temporary_files(conn: Conn) -> None:
    """The first sync held its rows in a WITH HOLD cursor, materialised to temporary
    files the size of the table (here 6 MB, more than work_mem's 4 MB); pages by key need none."""
    conn.execute("SET work_mem = '4MB'")
    conn.execute("CREATE TABLE public.posts (id int PRIMARY KEY, body text NOT NULL)")
    conn.execute(
        "INSERT INTO public.posts SELECT n, %s || n FROM generate_series(1, 4000) AS n", (BODY[:1500] + " ",)
    )

    def temp_bytes() -> int:
        conn.execute("SELECT pg_stat_force_next_flush()")  # (flushed as the session goes idle)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()")
        return int(str(row.fetchone()[0]))  # type: ignore[index]

    before = temp_bytes()
    keep.attach(conn, "posts", "public.posts", "id", "body")
    assert keep.sync(conn, "posts", jobs=2).added == 4000
    assert temp_bytes() - before == 0


def test_a_first_fill_hashes_texts_as_the_server_does_in_a_latin1_database(admin_dsn: str) -> None:
    """A first fill hashes the texts it reads itself only where its MD5 is the server's (a UTF-8
    database); in a LATIN1 one the server hashes them, so the next sync finds nothing changed and
    the column's fill guard (md5 of the text still the one read) lets every sketch in."""
    name = f"simdb_latin1_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(
            f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
        )
    params = psycopg.conninfo.conninfo_to_dict(admin_dsn)
    params["dbname"] = name
    url = psycopg.conninfo.make_conninfo("", **params)
    try:
        schema.upgrade(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE posts (id int PRIMARY KEY, body text, fp bigint)")
            texts = {1: "café crème brûlée " * 20, 2: "naïve façade déjà vu " * 20}
            conn.cursor().executemany("INSERT INTO posts (id, body) VALUES (%s, %s)", list(texts.items()))
            keep.attach(conn, "posts", "posts", "id", "body")
            assert keep.sync(conn, "posts").added == 2
            stored = dict(conn.execute("SELECT key, content_hash FROM simdb.posts").fetchall())
            server = dict(conn.execute("SELECT id::text, decode(md5(body), 'hex') FROM posts").fetchall())
            assert stored == server and stored["1"] != hashlib.md5(texts[1].encode()).digest()
            assert not keep.sync(conn, "posts", full=True).changed
            app_column.attach_in_table(conn, "posts_fp", "posts", "id", "fp", "body")
            assert keep.sync(conn, "posts_fp").filled == 2
            assert conn.execute("SELECT count(*) FROM posts WHERE fp IS NULL").fetchone() == (0,)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_writes_through_simdb_into_a_side_table_are_refused(
    capsys: pytest.CaptureFixture[str], articles: Conn, tmp_path: Path
) -> None:
    """What ingest, delete or prune wrote into an index that follows a table, the next sync would
    undo: each is refused in one line, and the index keeps the table's rows."""
    simdb(capsys, "attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")
    assert keys(articles) == ["1", "2", "3", "4"]
    for n in range(3):
        (tmp_path / f"{n}.txt").write_text(f"a document of its own, number {n}, about something")
    hint = (
        "(write public.articles (each sync then brings its rows here), or put documents in an index of"
        " their own: `simdb create NAME`)"
    )
    for command in (
        ["ingest", "arts", str(tmp_path)],
        ["delete", "arts", "1"],
        ["prune", "arts", "--older-than", "1s", "--yes"],
    ):
        assert simdb(capsys, *command) == (
            1,
            "",
            f"simdb: error: {command[0]} does not write index 'arts': it follows"
            f" public.articles.body, and each sync makes its rows those of that table {hint}\n",
        )
    made = index.get(articles, "arts")
    with pytest.raises(InvalidParameter) as ingested:
        ingest.ingest(articles, made, [])
    with pytest.raises(InvalidParameter) as added:
        api.BoundIndex(articles, made).add({"x": "a document of its own"})
    for refused, what in ((ingested, "ingest"), (added, "add")):
        assert str(refused.value) == (
            f"{what} does not write index 'arts': it follows public.articles.body, and each sync makes"
            f" its rows those of that table {hint}"
        )
    assert keys(articles) == ["1", "2", "3", "4"]
    articles.execute("DELETE FROM public.articles WHERE id = 3")  # a sync's own removal still works
    assert simdb(capsys, "sync", "arts")[1].startswith("synced: 0 new, 0 updated, 1 removed,")
    assert keys(articles) == ["1", "2", "4"]
