"""Change capture: triggers queue the changed keys, a sync applies the queue.

After any mix of application writes, a sync from the queue leaves the index equal (keys and
fingerprints) to a fresh attach of the same table; a rolled-back write queues nothing; a sync with
nothing queued touches neither the table nor the index; a row that fails stays queued with its
error; two syncs never take one key together; `sync --watch` applies a commit when it is notified.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import datetime

import psycopg
import pytest
from psycopg import sql
from support import Conn, simdb

from simdb.errors import PermissionDenied
from simdb.follow import keep, queue, side
from simdb.index import lifecycle as index
from simdb.index import names

WORDS = [f"word{n}" for n in range(60)]


def text(n: int) -> str:
    """A document of 40 words that overlaps with its neighbours."""
    return " ".join(WORDS[(n + i) % len(WORDS)] for i in range(40))


@pytest.fixture
def docs(conn: Conn) -> Conn:
    conn.execute("CREATE TABLE public.docs (id int PRIMARY KEY, body text, lang text NOT NULL, views int)")
    conn.execute(
        "INSERT INTO public.docs SELECT n, %s || ' doc ' || n, CASE WHEN n %% 5 = 0 THEN 'de' ELSE 'en' END, 0"
        " FROM generate_series(1, 40) AS n",
        (text(0),),
    )
    return conn


def rows(conn: Conn, name: str) -> list[tuple[object, ...]]:
    return conn.execute(
        sql.SQL("SELECT key, fingerprint, content_hash FROM {} ORDER BY key").format(
            sql.Identifier("simdb", name)
        )
    ).fetchall()


def fresh(conn: Conn, condition: str | None = None) -> list[tuple[object, ...]]:
    """The rows a new attach of public.docs (by snapshot) holds now, of index live's spec."""
    spec = index.get(conn, "live").spec
    keep.attach(conn, "fresh", "public.docs", "id", "body", condition, spec, triggers=False)
    keep.sync(conn, "fresh")
    made = rows(conn, "fresh")
    index.drop(conn, "fresh")
    return made


def queued(conn: Conn, name: str = "live") -> list[str]:
    return sorted(
        str(key)
        for (key,) in conn.execute(
            sql.SQL("SELECT key FROM {}").format(sql.Identifier("simdb", f"{name}__queue"))
        )
    )


@pytest.mark.parametrize("condition", [None, "lang = 'en'"])
def test_the_queue_leaves_the_index_equal_to_a_fresh_attach(
    dsn: str, docs: Conn, condition: str | None
) -> None:
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body", condition)
    first = queue.sync(conn, "live")  # the first fill compares snapshots
    assert first.added == (32 if condition else 40) and queued(conn) == []
    with psycopg.connect(dsn, autocommit=True) as app, psycopg.connect(dsn, autocommit=True) as other:
        app.execute("INSERT INTO public.docs VALUES (41, %s, 'en', 0), (42, %s, 'de', 0)", (text(3), text(4)))
        other.execute("UPDATE public.docs SET body = %s WHERE id IN (1, 2)", (text(7),))
        app.execute("UPDATE public.docs SET views = views + 1")  # no text changed
        other.execute("UPDATE public.docs SET id = 100 WHERE id = 3")  # a key change: 3 leaves, 100 comes
        app.execute("DELETE FROM public.docs WHERE id IN (4, 5)")
        other.execute("UPDATE public.docs SET body = NULL WHERE id = 6")
        app.execute("UPDATE public.docs SET body = '' WHERE id = 7")
        other.execute("UPDATE public.docs SET body = '... !!! ...' WHERE id = 8")
        app.execute("UPDATE public.docs SET lang = 'de' WHERE id = 9")  # leaves the --where condition
        other.execute("UPDATE public.docs SET lang = 'en' WHERE id = 10")  # enters it
        app.execute("UPDATE public.docs SET body = body WHERE id = 11")  # the same text again
        with app.transaction():
            app.execute("INSERT INTO public.docs VALUES (43, %s, 'en', 0)", (text(9),))
            app.execute("UPDATE public.docs SET body = %s WHERE id = 43", (text(10),))
        before = queued(conn)
        with pytest.raises(psycopg.errors.DivisionByZero), app.transaction():  # rolled back: no trace
            app.execute("INSERT INTO public.docs VALUES (44, 'never committed', 'en', 0)")
            app.execute("DELETE FROM public.docs WHERE id = 12")
            app.execute("SELECT 1 / 0")
    assert queued(conn) == before
    report = queue.sync(conn, "live")
    assert isinstance(report, queue.DrainReport) and report.failed == 0
    assert queued(conn) == []
    assert rows(conn, "live") == fresh(conn, condition)
    assert queue.sync(conn, "live").queued == 0


def test_what_the_triggers_queue(docs: Conn) -> None:
    """Only a change of the key or the text queues a key (without --where); one statement is one
    INSERT into the queue however many rows it changed."""
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body")
    queue.sync(conn, "live")
    conn.execute("UPDATE public.docs SET views = 7, lang = 'fr'")
    conn.execute("UPDATE public.docs SET body = body")
    assert queued(conn) == []
    conn.execute("UPDATE public.docs SET body = body || ' more' WHERE id <= 3")
    conn.execute("UPDATE public.docs SET id = id + 1000 WHERE id = 40")
    conn.execute("DELETE FROM public.docs WHERE id = 39")
    assert queued(conn) == ["1", "1040", "2", "3", "39", "40"]
    report = queue.sync(conn, "live")
    assert (report.added, report.updated, report.removed, report.queued) == (1, 3, 2, 6)
    assert rows(conn, "live") == fresh(conn)


def test_truncate_empties_the_index_at_once(docs: Conn) -> None:
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body")
    queue.sync(conn, "live")
    conn.execute("UPDATE public.docs SET body = 'queued before the truncate' WHERE id = 1")
    with conn.transaction():
        conn.execute("TRUNCATE public.docs")
        conn.execute("INSERT INTO public.docs VALUES (7, %s, 'en', 0)", (text(5),))
    assert rows(conn, "live") == []  # before any sync
    queue.sync(conn, "live")
    assert rows(conn, "live") == fresh(conn) and [row[0] for row in rows(conn, "live")] == ["7"]


def test_a_sync_with_nothing_queued_touches_neither_the_table_nor_the_index(dsn: str, docs: Conn) -> None:
    """While another transaction holds both tables locked against everything, a sync with an
    empty queue still completes: it read only the catalog and the queue."""
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body")
    queue.sync(conn, "live")
    with psycopg.connect(dsn) as holder:
        holder.execute("LOCK TABLE public.docs, simdb.live IN ACCESS EXCLUSIVE MODE")
        conn.execute("SET lock_timeout = '20s'")
        report = queue.sync(conn, "live")
        holder.rollback()
    assert (report.queued, report.changed) == (0, False)


def test_a_row_that_fails_stays_queued_with_its_error(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    """A key too long for the index's B-tree fails its batch; the batch is taken again key by key,
    the others are stored, and the bad one stays queued with its error until it is fixed."""
    conn.execute("CREATE TABLE public.notes (ref text, body text)")
    conn.execute("INSERT INTO public.notes VALUES ('a', %s)", (text(1),))
    keep.attach(conn, "notes", "public.notes", "ref", "body")
    queue.sync(conn, "notes")
    long_key = "k" * 3000
    conn.execute(
        "INSERT INTO public.notes VALUES ('b', %s), (%s, %s), ('c', %s)",
        (text(2), long_key, text(3), text(4)),
    )
    report = queue.sync(conn, "notes")
    assert (report.added, report.failed, report.queued) == (2, 1, 3)
    assert [key for (key,) in conn.execute("SELECT key FROM simdb.notes ORDER BY key")] == ["a", "b", "c"]
    (attempts, error), *more = conn.execute("SELECT attempts, last_error FROM simdb.notes__queue").fetchall()
    assert (
        more == [] and attempts == 1 and "is 3000 bytes in UTF-8, more than the 2600 a key may have" in error
    )
    assert queue.sync(conn, "notes").failed == 1  # retried alone, and failing again
    code, out, _ = simdb(capsys, "status", "notes", "--json")
    state = json.loads(out)
    assert code == 0 and (state["capture"], state["pending"], state["failed"]) == ("triggers", 1, 1)
    assert state["failures"][0]["attempts"] == 2 and state["failures"][0]["key"] == long_key
    out = simdb(capsys, "status", "notes")[1]
    assert out.startswith("index notes follows public.notes with triggers: 1 rows queued, the oldest queued")
    assert ", 1 failed; last synced " in out and "\n  failed: key 'kkkk" in out
    conn.execute("DELETE FROM public.notes WHERE ref = %s", (long_key,))
    assert queue.sync(conn, "notes").failed == 0
    assert queued(conn, "notes") == []
    # a key that two rows share fails the same way (a snapshot sync refuses it as a whole)
    conn.execute("INSERT INTO public.notes VALUES ('a', 'another note under the same key')")
    assert queue.sync(conn, "notes").failed == 1
    assert "key column 'ref' of public.notes is not unique" in str(
        conn.execute("SELECT last_error FROM simdb.notes__queue").fetchone()
    )


def test_two_syncs_never_take_one_key_together(dsn: str, docs: Conn) -> None:
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body")
    queue.sync(conn, "live")
    conn.execute("UPDATE public.docs SET body = body || ' again' WHERE id <= 10")
    conn.execute("UPDATE public.docs SET body = body || ' and again' WHERE id = 1")  # 1 queued twice
    with psycopg.connect(dsn, autocommit=True) as first, first.transaction():
        live = names.queue_table("live")
        picked, taken = queue._claim(
            first, "live", live, 1, datetime.now().astimezone()
        )  # key 1: held till commit
        assert (picked, taken) == (1, ["1"])
        second = queue.drain(conn, _work(conn, "live"))  # takes 2..10 and leaves key 1's other row queued
        assert (second.queued, second.updated) == (9, 9)
        assert queued(conn) == ["1", "1"]  # (the first sync's claim is not committed yet)
        _work(first, "live").apply(taken, queue.DrainReport())
    third = queue.drain(conn, _work(conn, "live"))  # key 1's second row: its text is stored already
    assert (third.queued, third.unchanged, third.updated) == (1, 1, 0)
    assert queued(conn) == [] and rows(conn, "live") == fresh(conn)


def test_watch_applies_a_commit_when_notified(dsn: str, docs: Conn) -> None:
    """--watch waits on LISTEN: with an hour between two looks at the queue, the commit's
    notification alone brings the row in."""
    conn = docs
    keep.attach(conn, "live", "public.docs", "id", "body")
    seen: list[side.SyncReport] = []
    changed, stop = threading.Event(), threading.Event()

    def record(report: side.SyncReport) -> None:
        seen.append(report)
        changed.set()

    def watcher() -> None:
        with psycopg.connect(dsn, autocommit=True) as own:
            keep.watch(own, "live", 3600, record, stop=stop.is_set)

    thread = threading.Thread(target=watcher)
    thread.start()
    try:
        assert changed.wait(60) and seen[0].added == 40  # the first fill
        changed.clear()
        conn.execute("INSERT INTO public.docs VALUES (50, %s, 'en', 0)", (text(8),))
        assert changed.wait(60)
        last = seen[-1]
        assert isinstance(last, queue.DrainReport) and (last.added, last.queued) == (1, 1)
    finally:
        stop.set()
        conn.execute('NOTIFY "simdb_live"')  # wake it to see the stop
        thread.join(60)
    assert not thread.is_alive() and rows(conn, "live") == fresh(conn)


def test_drop_removes_the_triggers_functions_and_queue_and_nothing_else(
    capsys: pytest.CaptureFixture[str], docs: Conn
) -> None:
    conn = docs
    conn.execute("CREATE FUNCTION public.touch() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'")
    conn.execute(
        "CREATE TRIGGER app_touch BEFORE UPDATE ON public.docs FOR EACH ROW EXECUTE FUNCTION public.touch()"
    )
    conn.execute("CREATE INDEX docs_lang ON public.docs (lang)")
    triggers = "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'public.docs'::regclass AND NOT tgisinternal ORDER BY 1"
    functions = (
        "SELECT proname::text FROM pg_proc WHERE proname LIKE 'live%%' OR proname = 'touch' ORDER BY 1"
    )
    assert (
        simdb(capsys, "attach", "live", "--table", "docs", "--key-column", "id", "--text-column", "body")[0]
        == 0
    )
    assert conn.execute(triggers).fetchall() == [
        ("app_touch",),
        ("simdb_live__delete",),
        ("simdb_live__insert",),
        ("simdb_live__truncate",),
        ("simdb_live__update",),
    ]
    assert len(conn.execute(functions).fetchall()) == 1 + 4 + 3  # touch, 4 capture, near, pairs, fresh pairs
    assert simdb(capsys, "drop", "live", "--yes")[0] == 0
    assert conn.execute(triggers).fetchall() == [("app_touch",)]
    assert conn.execute(functions).fetchall() == [("touch",)]
    for relation in ("simdb.live__queue", "simdb.live__status", "public.docs_lang", "public.docs"):
        expected = None if relation.startswith("simdb.") else relation.split(".")[1]
        assert conn.execute("SELECT to_regclass(%s)::text", (relation,)).fetchone() == (expected,)
    conn.execute("INSERT INTO public.docs VALUES (99, 'still writable', 'en', 0)")
    # a dropped table takes its triggers along; the index then drops cleanly
    assert (
        simdb(capsys, "attach", "live", "--table", "docs", "--key-column", "id", "--text-column", "body")[0]
        == 0
    )
    conn.execute("DROP TABLE public.docs")
    assert simdb(capsys, "drop", "live", "--yes")[0] == 0
    assert conn.execute(functions).fetchall() == [("touch",)]


@pytest.fixture
def roles(conn: Conn) -> Iterator[tuple[str, str, str]]:
    made = tuple(f"simdb_{kind}_{os.getpid()}" for kind in ("reader", "writer", "app"))
    for name in made:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(name)))
    yield made  # type: ignore[misc]
    for name in made:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _as(dsn: str, role: str) -> Conn:
    session = psycopg.connect(dsn, autocommit=True)
    session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    return session


def test_roles_an_application_writes_a_writer_syncs_a_reader_cannot(
    dsn: str, docs: Conn, roles: tuple[str, str, str]
) -> None:
    conn, (reader, writer, app) = docs, roles
    keep.attach(conn, "live", "public.docs", "id", "body")
    queue.sync(conn, "live")
    index.grant(conn, "live", reader)
    index.grant(conn, "live", writer, writer=True)
    conn.execute(sql.SQL("GRANT SELECT ON public.docs TO {}").format(sql.Identifier(writer)))
    conn.execute(
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON public.docs TO {}").format(sql.Identifier(app))
    )
    with _as(dsn, app) as session:  # no right on simdb's schema at all: the triggers run as their owner
        session.execute("INSERT INTO public.docs VALUES (60, %s, 'en', 0)", (text(11),))
        session.execute("UPDATE public.docs SET body = %s WHERE id = 1", (text(12),))
        session.execute("DELETE FROM public.docs WHERE id = 2")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            session.execute("SELECT * FROM simdb.live__queue")
    with _as(dsn, reader) as session:
        with pytest.raises(PermissionDenied):
            queue.sync(session, "live")
        assert session.execute("SELECT pending, failed FROM simdb.live__status").fetchone() == (3, 0)
    with _as(dsn, writer) as session:
        report = queue.sync(session, "live")
        assert (report.added, report.updated, report.removed) == (1, 1, 1)
    assert queued(conn) == [] and rows(conn, "live") == fresh(conn)


def test_cli_sync_full_status_and_no_triggers(capsys: pytest.CaptureFixture[str], docs: Conn) -> None:
    conn = docs
    base = ["--table", "docs", "--key-column", "id", "--text-column", "body"]
    code, out, err = simdb(capsys, "attach", "live", *base)
    assert code == 0 and out.splitlines()[1].startswith("synced: 40 new, 0 updated, 0 removed"), err
    conn.execute("DELETE FROM simdb.live WHERE key IN ('1', '2')")  # damage the index behind simdb's back
    conn.execute("UPDATE public.docs SET body = 'changed text for row three' WHERE id = 3")
    assert simdb(capsys, "status", "live", "--json")[1].startswith(
        '{"name": "live", "table": "public.docs", "capture": "triggers", "synced_at": "'
    )
    code, out, _ = simdb(capsys, "sync", "live", "--full")
    assert (code, out) == (
        0,
        "synced: 2 new, 1 updated, 0 removed, 0 without text (not indexed);"
        " unchanged rows were compared by hash, not fingerprinted\n",
    )
    assert queued(conn) == [] and rows(conn, "live") == fresh(conn)
    code, out, _ = simdb(capsys, "sync", "live", "--json")
    assert json.loads(out) == {
        "added": 0,
        "updated": 0,
        "unchanged": 0,
        "removed": 0,
        "empty": 0,
        "queued": 0,
        "failed": 0,
    }
    # --no-triggers: nothing on the table, no queue, and a sync compares snapshots as before
    code, out, _ = simdb(capsys, "attach", "plain", *base, "--no-triggers")
    assert code == 0 and conn.execute("SELECT to_regclass('simdb.plain__queue')").fetchone() == (None,)
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'simdb_plain%%'").fetchone() == (
        0,
    )
    conn.execute("UPDATE public.docs SET body = 'and now row four changed' WHERE id = 4")
    assert simdb(capsys, "sync", "plain")[1].startswith("synced: 0 new, 1 updated, 0 removed")
    out = simdb(capsys, "status", "plain")[1]
    assert out.startswith(
        "index plain follows public.docs without triggers: each sync compares the whole table"
    )
    code, _, err = simdb(capsys, "sync", "plain", "--full", "--watch")
    assert code == 1 and "--full and --watch do not go together" in err


def test_bench_measures_the_lag_of_each_commit_at_a_steady_rate(conn: Conn, dsn: str) -> None:
    """`bench --app-table --writes-per-second`: every paced commit's row is found under --watch,
    and the rate asked is not exceeded."""
    from simdb.measure import apptable

    conn.execute(
        sql.SQL("CREATE TABLE {} (id bigserial PRIMARY KEY, body text, fp bigint)").format(
            sql.Identifier(apptable.TABLE)
        )
    )
    keep.attach(conn, apptable.SIDE, f"public.{apptable.TABLE}", "id", "body")
    reports: list[object] = []
    stop = threading.Event()
    with psycopg.connect(dsn, autocommit=True) as watcher:
        watching = threading.Thread(
            target=keep.watch,
            args=(watcher, apptable.SIDE, 3600.0, reports.append),
            kwargs={"stop": stop.is_set},
            daemon=True,
        )
        watching.start()
        while not reports:
            watching.join(0.05)
        lag, reached = apptable._paced_lag(dsn, apptable.SIDE, [text(n) for n in range(30)], 60.0)
        stop.set()
        conn.execute(sql.SQL("INSERT INTO {} (body) VALUES ('wake')").format(sql.Identifier(apptable.TABLE)))
        watching.join(60)
    assert len(lag) == 30 and all(0 < seconds < 30 for seconds in lag)
    assert 0 < reached <= 60.0 * 1.05


def _work(conn: Conn, name: str) -> queue._Work:
    """What a sync of index NAME applies its queued keys with."""
    return queue._Work(conn, index.get(conn, name), side.source_of(conn, name))
