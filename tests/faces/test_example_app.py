"""An application with its own SQLAlchemy model and Alembic history adds simdb, then queries it."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic import op as alembic_op
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.operations import Operations
from alembic.script import ScriptDirectory
from example_app.models import Article, Base
from sqlalchemy import BigInteger, Column, Integer, Text, cast, column, create_engine, literal, select, table
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool
from support import TESTS, simdb

from simdb import alembic as simdb_ops
from simdb import fingerprint, schema
from simdb.errors import InvalidParameter, SimdbError
from simdb.follow import keep
from simdb.index import catalog
from simdb.sketch.bits import hamming as bit_distance
from simdb.sketch.bits import to_signed
from simdb.sqlalchemy import Fingerprint, hamming, include_object, near, near_key

APP = TESTS / "example_app"
BODY = " ".join(f"paragraph{i} about{i % 9} things" for i in range(200))


def _alembic(dsn: str, action: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(APP / "migrations"))
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, action)(config, revision)
    engine.dispose()


def test_app_migrations_attach_simdb_and_queries_join_the_model(empty_db: str) -> None:
    _alembic(empty_db, "upgrade", "head")
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(empty_db), poolclass=NullPool
    )
    with Session(engine) as session:
        session.add_all(
            [
                Article(id=1, title="original", body=BODY),
                Article(id=2, title="reposted", body=BODY + " (reposted)"),
                Article(id=3, title="other", body="a different story altogether, with other words"),
            ]
        )
        session.commit()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert keep.sync(conn, "articles_dups").added == 3

    with Session(engine) as session:
        dups = near("articles_dups", fingerprint(BODY), 3)
        rows = session.execute(
            select(Article.title, dups.c.distance)
            .join(dups, Article.id == cast(dups.c.key, BigInteger))  # as the README joins
            .order_by(dups.c.distance, Article.id)
        ).all()
        assert [title for title, _ in rows] == ["original", "reposted"]
        assert rows[0].distance == 0
        around = near_key("articles_dups", "1")
        titles = session.scalars(
            select(Article.title).join(around, Article.id == cast(around.c.key, BigInteger))
        ).all()
        assert sorted(titles) == ["original", "reposted"]
        distance = session.scalar(select(hamming(0xFFFFFFFFFFFFFFFF, 0x0F)))
        assert distance == 60
        rows_table = table(
            "articles_dups", column("key", Text), column("fingerprint", Fingerprint()), schema="simdb"
        )
        stored = session.scalar(select(rows_table.c.fingerprint).where(rows_table.c.key == "1"))
        assert stored == fingerprint(BODY)  # read back unsigned through the Fingerprint type
        assert session.scalar(select(literal(2**64 - 1, Fingerprint()))) == 2**64 - 1
        assert session.scalar(select(cast(literal(2**64 - 1, Fingerprint()), BigInteger))) == -1
    engine.dispose()

    _alembic(empty_db, "downgrade", "base")
    with psycopg.connect(empty_db) as conn:
        gone = conn.execute("SELECT to_regclass('public.articles'), to_regnamespace('simdb')").fetchone()
        assert gone == (None, None)


def test_the_models_fingerprint_column_is_searched_through_simdbs_btrees(empty_db: str) -> None:
    """The application writes Article.fp, finds near-duplicates with
    Article.fp.near, and its MetaData declares simdb's B-trees, so autogenerate finds nothing."""
    _alembic(empty_db, "upgrade", "head")
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(empty_db), poolclass=NullPool
    )
    bodies = {1: BODY, 2: BODY + " (reposted)", 3: "a different story altogether, with other words"}
    bodies |= {10 + i: f"{BODY} edition {i} " + "more words " * i for i in range(20)}
    with Session(engine) as session:
        session.add_all(
            Article(id=key, title=f"t{key}", body=body, fp=fingerprint(body)) for key, body in bodies.items()
        )
        session.commit()
        probe = fingerprint(BODY)
        for k in (0, 2, 3):
            found = session.scalars(select(Article.id).where(Article.fp.near(probe, k)).order_by(Article.id))
            expected = [key for key, body in bodies.items() if bit_distance(fingerprint(body), probe) <= k]
            assert found.all() == sorted(expected), k
        assert 2 in expected and 3 not in expected
        distances = session.execute(select(Article.id, Article.fp.hamming_distance(probe))).all()
        assert sorted(distances) == sorted(
            (key, bit_distance(fingerprint(body), probe)) for key, body in bodies.items()
        )
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": include_object})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()
    _alembic(empty_db, "downgrade", "base")
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regclass('public.articles')").fetchone() == (None,)


def _in_migration(dsn: str, action: Callable[[], None], *, commit: bool) -> None:
    """Run `action` as a migration's body would (alembic.op bound to one connection's transaction)."""
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    with engine.connect() as connection, connection.begin() as transaction:
        with Operations.context(MigrationContext.configure(connection)):
            action()
        if not commit:
            transaction.rollback()
    engine.dispose()


def test_drop_schema_refuses_while_indexes_it_did_not_name_exist(
    capsys: pytest.CaptureFixture[str], empty_db: str, tmp_path: Path
) -> None:
    """The README's downgrade must not take another team's index with it."""
    _alembic(empty_db, "upgrade", "a0002")  # (before the index in the articles' own column)
    records = tmp_path / "team.jsonl"
    records.write_text(
        "".join(json.dumps({"key": f"k{i}", "text": f"note {i} of team b"}) + "\n" for i in range(300))
    )
    for team in ("team_b", "team_c"):
        assert simdb(capsys, "--dsn", empty_db, "ingest", team, str(records), "--create")[0] == 0

    refused = "simdb's schema holds indexes this migration did not name: team_b, team_c; nothing was dropped"
    with pytest.raises(SimdbError, match=re.escape(refused)):
        _alembic(empty_db, "downgrade", "base")
    with psycopg.connect(empty_db) as conn:  # the whole downgrade rolled back: the app's table too
        assert conn.execute("SELECT count(*) FROM simdb.team_b").fetchone() == (300,)
        assert conn.execute("SELECT to_regclass('public.articles') IS NOT NULL").fetchone() == (True,)
        assert catalog.index_names(conn) == ["articles_dups", "team_b", "team_c"]

    with pytest.raises(SimdbError, match="did not name: team_c;"):
        _in_migration(empty_db, lambda: simdb_ops.drop_schema("articles_dups", "team_b"), commit=True)
    _in_migration(empty_db, lambda: simdb_ops.drop_schema("articles_dups", "team_b", "team_c"), commit=False)
    with psycopg.connect(empty_db) as conn:
        assert catalog.index_names(conn) == ["articles_dups", "team_b", "team_c"]  # (rolled back)
    _in_migration(empty_db, lambda: simdb_ops.drop_schema(force=True), commit=True)
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regnamespace('simdb')").fetchone() == (None,)


def test_simdb_migrations_take_one_line_each_in_the_apps_alembic_output(
    empty_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Simdb's revisions described themselves in several lines each."""
    with caplog.at_level(logging.INFO, logger="alembic.runtime.migration"):
        _alembic(empty_db, "upgrade", "head")
        _alembic(empty_db, "downgrade", "base")
    steps = [
        record.getMessage()
        for record in caplog.records
        if re.match(r"Running (up|down)grade (\d{4}|) -> (\d{4}|),", record.getMessage())
    ]
    revisions = len(list(ScriptDirectory.from_config(schema.alembic_config()).walk_revisions()))
    assert len(steps) == 2 * revisions
    for step in steps:
        assert "\n" not in step and len(step.split(", ", 1)[1]) <= 80, step


def test_attach_index_fills_the_index_in_the_migration_or_warns_that_it_is_empty(
    empty_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A migration's attach_index left the index empty without a word."""
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO public.notes VALUES (1, %s), (2, %s), (3, NULL)", (BODY, BODY + " again"))

    def attached(name: str, **extra: bool) -> Callable[[], None]:
        def migration() -> None:  # the body of an application's upgrade()
            simdb_ops.ensure_schema()
            simdb_ops.attach_index(name, table="public.notes", key_column="id", text_column="body", **extra)

        return migration

    _in_migration(empty_db, attached("filled", sync=True), commit=False)  # rolled back: no trace
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regnamespace('simdb'), to_regclass('simdb.filled')").fetchone() == (
            None,
            None,
        )
    _in_migration(empty_db, attached("filled", sync=True), commit=True)
    with caplog.at_level(logging.WARNING, logger="simdb.alembic"):
        _in_migration(empty_db, attached("empty"), commit=True)
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT key FROM simdb.filled ORDER BY key").fetchall() == [("1",), ("2",)]
        assert conn.execute("SELECT count(*) FROM simdb.empty").fetchone() == (0,)
    assert caplog.messages == [
        "simdb index empty is attached to public.notes but holds no rows yet: run `simdb sync empty` "
        "(or attach_index(..., sync=True) to fill it in the migration)"
    ]


def test_a_migration_that_fails_after_simdbs_ops_leaves_nothing_of_them(empty_db: str) -> None:
    """Simdb's ops commit nothing of their own, so the failed migration's
    rollback takes the schema, the index and its rows with the application's table."""
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO public.notes VALUES (1, %s)", (BODY,))

    def migration() -> None:
        alembic_op.create_table("app_table", Column("id", Integer, primary_key=True))
        simdb_ops.ensure_schema()
        simdb_ops.attach_index("dups", table="public.notes", key_column="id", text_column="body", sync=True)
        with psycopg.connect(empty_db, autocommit=True) as other:  # nothing seen outside yet
            assert other.execute("SELECT to_regnamespace('simdb')").fetchone() == (None,)
        raise RuntimeError("the migration's next step fails")

    with pytest.raises(RuntimeError, match="next step fails"):
        _in_migration(empty_db, migration, commit=True)
    with psycopg.connect(empty_db) as conn:
        left = conn.execute("SELECT to_regnamespace('simdb'), to_regclass('public.app_table')").fetchone()
        assert left == (None, None)
        assert conn.execute("SELECT count(*) FROM public.notes").fetchone() == (1,)


def test_simdb_schema_ensure_schema_on_a_migrations_own_connection(empty_db: str) -> None:
    """A Django migration (or any caller holding a psycopg connection in a transaction) calls
    simdb.schema.ensure_schema(conn): its transaction stays open and undecided."""

    def migration() -> None:
        alembic_op.create_table("app_table", Column("id", Integer, primary_key=True))
        driver = alembic_op.get_bind().connection.driver_connection
        assert schema.ensure_schema(driver) is True
        alembic_op.execute("INSERT INTO app_table VALUES (1)")  # the migration's op still works

    _in_migration(empty_db, migration, commit=False)
    with psycopg.connect(empty_db) as conn:
        left = conn.execute("SELECT to_regnamespace('simdb'), to_regclass('public.app_table')").fetchone()
        assert left == (None, None)
    _in_migration(empty_db, migration, commit=True)
    with psycopg.connect(empty_db) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert conn.execute("SELECT count(*) FROM app_table").fetchone() == (1,)


def test_attach_index_in_the_tables_own_column_within_the_migration(empty_db: str) -> None:
    """An application's migration adds a fingerprint column and simdb's index
    on it, atomically: rolled back, nothing of either stays."""
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text)")
        conn.execute("INSERT INTO public.notes VALUES (1, %s), (2, %s)", (BODY, BODY + " again"))

    def migration() -> None:
        alembic_op.add_column("notes", Column("fp", BigInteger))
        simdb_ops.ensure_schema()
        simdb_ops.attach_index(
            "dups",
            table="public.notes",
            key_column="id",
            text_column="body",
            fingerprint_column="fp",
            sync=True,
        )

    _in_migration(empty_db, migration, commit=False)
    with psycopg.connect(empty_db) as conn:
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'notes'"
        )
        assert sorted(name for (name,) in columns) == ["body", "id"]
        assert conn.execute("SELECT to_regnamespace('simdb')").fetchone() == (None,)
    _in_migration(empty_db, migration, commit=True)
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT id, fp FROM public.notes ORDER BY id").fetchall() == [
            (1, to_signed(fingerprint(BODY))),
            (2, to_signed(fingerprint(BODY + " again"))),
        ]
        assert conn.execute("SELECT key FROM simdb.near_key('dups', '1', 0)").fetchall() == [("1",)]
    with pytest.raises(InvalidParameter, match=r"attach_index\('x'\) takes text_column, or one of"):
        _in_migration(
            empty_db, lambda: simdb_ops.attach_index("x", table="public.notes", key_column="id"), commit=False
        )
