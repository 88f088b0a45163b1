"""simdb grant: a reader can query and cannot write; a writer can ingest."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from support import Conn, simdb

from simdb import ingest, schema
from simdb.errors import PermissionDenied
from simdb.follow import app_column, keep
from simdb.index import lifecycle as index


@pytest.fixture
def roles(conn: Conn) -> Iterator[tuple[str, str]]:
    names = (f"simdb_reader_{os.getpid()}", f"simdb_writer_{os.getpid()}")
    for name in names:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(name)))
    yield names
    for name in names:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


def _as_role(dsn: str, role: str) -> Conn:
    """A new session that acts as `role`, as an application logged in as that role would."""
    session = psycopg.connect(dsn, autocommit=True)
    session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    return session


def test_reader_queries_and_cannot_write(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: Conn, roles: tuple[str, str]
) -> None:
    reader, writer = roles
    made = index.create(conn, "docs")
    ingest.store(conn, made, {"a": 1, "b": 3})
    assert simdb(capsys, "grant", "docs", "--reader", reader, "--writer", writer) == (
        0,
        f"granted index docs to {reader} (reader), {writer} (writer)\n",
        "",
    )
    with _as_role(dsn, reader) as session:
        near = session.execute("SELECT key, distance FROM simdb.near('docs', 1, 1)").fetchall()
        assert near == [("a", 0), ("b", 1)]
        assert session.execute("SELECT count(*) FROM simdb.pairs('docs')").fetchone() == (1,)
        for statement in (
            "INSERT INTO simdb.docs (key, fingerprint) VALUES ('c', 5)",
            "UPDATE simdb.docs SET fingerprint = 7",
            "DELETE FROM simdb.docs",
            "CREATE TABLE simdb.sneaky (x int)",
            "DROP TABLE simdb.docs",
            "DELETE FROM simdb._indexes",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                session.execute(statement)
    with _as_role(dsn, writer) as session:
        assert ingest.store(session, index.get(session, "docs"), {"c": 5, "a": 2}) == (1, 1)
        assert ingest.delete(session, index.get(session, "docs"), ["b"]) == 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            session.execute("CREATE TABLE simdb.sneaky (x int)")
    assert conn.execute("SELECT key FROM simdb.docs ORDER BY key").fetchall() == [("a",), ("c",)]


def test_grant_errors(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    index.create(conn, "docs")
    assert simdb(capsys, "grant", "docs", "--reader", "nobody_here") == (
        1,
        "",
        "simdb: error: no role named 'nobody_here' (create it first, e.g. CREATE ROLE nobody_here LOGIN)\n",
    )
    assert simdb(capsys, "grant", "docs")[0] == 2


def test_a_reader_lists_the_indexes_it_was_granted(
    capsys: pytest.CaptureFixture[str],
    dsn: str,
    conn: Conn,
    roles: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`simdb list` as a role granted one index shows that index, not an error."""
    reader, _ = roles
    conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(reader)))
    ingest.store(conn, index.create(conn, "mine"), {"a": 1, "b": 3})
    index.create(conn, "theirs")
    assert simdb(capsys, "grant", "mine", "--reader", reader)[0] == 0
    monkeypatch.setenv("SIMDB_DSN", psycopg.conninfo.make_conninfo(dsn, user=reader))
    code, out, err = simdb(capsys, "list", "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert [entry["name"] for entry in listed] == ["mine"] and listed[0]["rows"] == 2


def test_a_reader_running_clusters_is_told_which_role_may(
    capsys: pytest.CaptureFixture[str],
    dsn: str,
    conn: Conn,
    roles: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`simdb clusters` (and dedup, which stores clusters too) as a reader says
    what it lacks and which role has it, before computing anything; not a raw permission error."""
    reader, _ = roles
    conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(reader)))
    ingest.store(conn, index.create(conn, "docs"), {"a": 1, "b": 3})
    owner = conn.execute("SELECT current_user").fetchone()
    assert owner is not None and simdb(capsys, "grant", "docs", "--reader", reader)[0] == 0
    monkeypatch.setenv("SIMDB_DSN", psycopg.conninfo.make_conninfo(dsn, user=reader))
    hint = f"(run it as role '{owner[0]}', the index's owner, or a role granted that; `simdb pairs docs` lists the pairs without storing them)\n"
    refused = f"simdb: error: role '{reader}' cannot store the clusters of index 'docs': that needs"
    for command in (("clusters", "docs"), ("dedup", "docs", "--keep", "first")):
        assert simdb(capsys, *command) == (1, "", f"{refused} CREATE on schema simdb {hint}")
    monkeypatch.delenv("SIMDB_DSN")
    assert simdb(capsys, "--dsn", dsn, "clusters", "docs")[0] == 0  # the owner may
    assert simdb(capsys, "--dsn", dsn, "grant", "docs", "--reader", reader)[0] == 0  # and it may read them
    monkeypatch.setenv("SIMDB_DSN", psycopg.conninfo.make_conninfo(dsn, user=reader))
    assert simdb(capsys, "clusters", "docs") == (
        1,
        "",
        f"{refused} INSERT and TRUNCATE on simdb.docs__clusters {hint}",
    )
    code, out, err = simdb(capsys, "pairs", "docs")
    assert (code, err) == (0, "") and out.splitlines()[1:] == ["a,b,1"]
    with _as_role(dsn, reader) as session:
        assert session.execute("SELECT key, cluster FROM simdb.docs__clusters ORDER BY key").fetchall() == [
            ("a", 1),
            ("b", 1),
        ]


def test_a_writer_syncs_an_attached_index_and_a_reader_cannot(
    dsn: str, conn: Conn, roles: tuple[str, str]
) -> None:
    """A writer's sync failed with `permission denied for table _sources`."""
    reader, writer = roles
    conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO public.notes VALUES (1, 'the first note of a long list of notes')")
    keep.attach(conn, "notes", "public.notes", "id", "body")
    index.grant(conn, "notes", reader)
    index.grant(conn, "notes", writer, writer=True)
    conn.execute(
        sql.SQL("GRANT SELECT ON public.notes TO {}, {}").format(
            sql.Identifier(reader), sql.Identifier(writer)
        )
    )
    conn.execute("INSERT INTO public.notes VALUES (2, 'a second note, written after the attach')")
    with _as_role(dsn, writer) as session:
        assert keep.sync(session, "notes").added == 2  # (attach itself does not sync)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the column a sync records, no more
            session.execute("UPDATE simdb._sources SET source_table = 'elsewhere'")
    assert [row[0] for row in conn.execute("SELECT key FROM simdb.notes ORDER BY key")] == ["1", "2"]
    conn.execute("INSERT INTO public.notes VALUES (3, 'a third note that only the writer may add')")
    with _as_role(dsn, reader) as session, pytest.raises(PermissionDenied) as refused:
        keep.sync(session, "notes")
    assert str(refused.value) == (
        f"role {reader} may not sync index 'notes': a sync writes simdb.notes and takes the keys queued"
        f" in simdb.notes__queue (sync as the index's owner, or grant the role that: `simdb grant notes"
        f" --writer {reader}`)"
    )
    assert conn.execute("SELECT count(*) FROM simdb.notes__queue").fetchone() == (1,)  # still queued


def test_a_writer_fills_an_index_in_the_table_and_records_the_sync(
    dsn: str, conn: Conn, roles: tuple[str, str]
) -> None:
    """A writer's fill records when it ran and the rows without words it found (status reads
    them), in the catalog columns it was granted; a role that may only write the column fills too."""
    reader, writer = roles
    conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text, fp bigint)")
    conn.execute("INSERT INTO public.notes VALUES (1, 'the first note of a long list of notes'), (2, '')")
    app_column.attach_in_table(conn, "notes", "public.notes", "id", "fp", "body")
    index.grant(conn, "notes", writer, writer=True)
    index.grant(conn, "notes", reader)
    conn.execute(sql.SQL("GRANT SELECT, UPDATE (fp) ON public.notes TO {}").format(sql.Identifier(writer)))
    conn.execute(sql.SQL("GRANT SELECT, UPDATE (fp) ON public.notes TO {}").format(sql.Identifier(reader)))
    recorded = "SELECT synced_at IS NOT NULL, wordless FROM simdb._sources WHERE index_name = 'notes'"
    with _as_role(dsn, writer) as session:
        assert keep.sync(session, "notes").as_dict() == {"filled": 1, "empty": 1}
    assert conn.execute(recorded).fetchone() == (True, 1)
    conn.execute("UPDATE public.notes SET fp = NULL, body = 'a note rewritten with other words' WHERE id = 1")
    conn.execute("UPDATE simdb._sources SET synced_at = NULL, wordless = NULL")
    with _as_role(dsn, reader) as session:  # (a reader of the catalog: fills, unrecorded)
        assert keep.sync(session, "notes").as_dict() == {"filled": 1, "empty": 1}
    assert conn.execute(recorded).fetchone() == (False, None)


def test_the_migration_lets_a_writer_of_before_record_the_rows_without_words(empty_db: str) -> None:
    """A role that could record a sync (UPDATE of _sources.synced_at) before the column of rows
    without words existed may record that too after the migration, so its fills keep recording."""
    schema.upgrade(empty_db, "0015")
    writer = f"simdb_old_writer_{os.getpid()}"
    column = "SELECT has_column_privilege(%s, 'simdb._sources', 'wordless', 'UPDATE')"
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(writer)))
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(writer)))
        try:
            conn.execute(
                sql.SQL("GRANT UPDATE (synced_at) ON simdb._sources TO {}").format(sql.Identifier(writer))
            )
            schema.upgrade(empty_db)
            assert conn.execute(column, (writer,)).fetchone() == (True,)
        finally:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(writer)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(writer)))


def test_pairs_new_needs_the_owner_first_then_a_writer(
    capsys: pytest.CaptureFixture[str],
    dsn: str,
    conn: Conn,
    roles: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first `pairs --new` alters the index's table (its owner's to do); then a writer keeps
    its own mark, and a reader is told which role may."""
    reader, writer = roles
    for role in roles:
        conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(role)))
    ingest.store(conn, index.create(conn, "docs"), {"a": 1, "b": 3})
    index.grant(conn, "docs", reader)
    index.grant(conn, "docs", writer, writer=True)
    owner = conn.execute("SELECT current_user").fetchone()
    assert owner is not None
    monkeypatch.setenv("SIMDB_DSN", psycopg.conninfo.make_conninfo(dsn, user=writer))
    assert simdb(capsys, "pairs", "docs", "--new") == (
        1,
        "",
        f"simdb: error: role '{writer}' cannot start tracking the changes of index 'docs': that alters its"
        f" table, which role '{owner[0]}' owns (run the first `simdb pairs docs --new` as role"
        f" '{owner[0]}'; later runs need a writer)\n",
    )
    assert simdb(capsys, "--dsn", dsn, "pairs", "docs", "--new")[1] == "key_a,key_b,distance\na,b,1\n"
    assert simdb(capsys, "pairs", "docs", "--new", "--consumer", "writer")[1].splitlines()[1:] == ["a,b,1"]
    with _as_role(dsn, writer) as session:
        ingest.store(session, index.get(session, "docs"), {"c": 7})
    assert simdb(capsys, "pairs", "docs", "--new", "--consumer", "writer")[1].splitlines()[1:] == [
        "a,c,2",
        "b,c,1",
    ]
    monkeypatch.setenv("SIMDB_DSN", psycopg.conninfo.make_conninfo(dsn, user=reader))
    code, _, err = simdb(capsys, "pairs", "docs", "--new")
    assert code == 1 and err.startswith(f"simdb: error: role '{reader}' cannot keep a mark of index 'docs'")
    assert f"`simdb grant docs --writer {reader}`" in err
