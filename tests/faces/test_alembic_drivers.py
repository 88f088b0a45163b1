"""simdb.alembic's operations run on the migration's own SQLAlchemy connection, whatever driver
it has (psycopg2, asyncpg, async psycopg as `alembic init -t async` sets up), and in offline mode
ensure_schema writes simdb's schema into the script."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.config import Config
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from sqlalchemy import URL, create_engine
from sqlalchemy.engine import Connection as SAConnection
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from support import TESTS

from simdb import schema
from simdb.db import sabridge
from simdb.db.bit_string import BitString
from simdb.errors import SimdbError
from simdb.follow import keep
from simdb.index import catalog

APP = TESTS / "example_app"


def _url(dsn: str, driver: str) -> URL:
    params = conninfo_to_dict(dsn)
    return URL.create(
        f"postgresql+{driver}",
        username=str(params.get("user") or "postgres"),
        password=params.get("password"),  # type: ignore[arg-type]
        host=str(params.get("host") or "127.0.0.1"),
        port=int(params.get("port") or 5432),
        database=str(params["dbname"]),
    )


def _config(script_location: Path) -> Config:
    config = Config()
    config.set_main_option("script_location", str(script_location))
    return config


def _migrate(url: URL, action: Callable[[Config], None], script_location: Path = APP / "migrations") -> None:
    """Run an Alembic command on one connection of `url`'s driver, as the generic and the async
    (`alembic init -t async`: run_sync on an AsyncConnection) templates do."""
    config = _config(script_location)

    def run(connection: SAConnection) -> None:
        config.attributes["connection"] = connection
        action(config)

    if url.drivername in ("postgresql+asyncpg", "postgresql+psycopg_async"):

        async def run_async() -> None:
            engine = create_async_engine(url, poolclass=NullPool)
            async with engine.begin() as connection:
                await connection.run_sync(run)
            await engine.dispose()

        asyncio.run(run_async())
        return
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        run(connection)
    engine.dispose()


@pytest.mark.parametrize("driver", ["psycopg2", "asyncpg", "psycopg_async"])
def test_the_example_apps_migrations_run_on_every_driver(empty_db: str, driver: str) -> None:
    url = _url(empty_db, driver)
    _migrate(url, lambda config: command.upgrade(config, "head"))
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert catalog.index_names(conn) == ["articles_dups", "articles_fp"]
        btrees = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND indexname LIKE 'simdb_articles_fp_%'"
        ).fetchone()
        assert btrees == (5,)  # four blocks' B-trees and the key's
        conn.execute(
            "INSERT INTO articles (id, title, body) VALUES (1, 'a', 'one text about things'),"
            " (2, 'b', 'one text about things, again')"
        )
        assert keep.sync(conn, "articles_dups").added == 2
    _migrate(url, lambda config: command.downgrade(config, "base"))
    with psycopg.connect(empty_db) as conn:
        gone = conn.execute("SELECT to_regclass('public.articles'), to_regnamespace('simdb')").fetchone()
        assert gone == (None, None)


OFFLINE_ENV = """
from alembic import context

context.configure(url="postgresql://", literal_binds=True)
with context.begin_transaction():
    context.run_migrations()
"""

OFFLINE_REVISION = """
from simdb import alembic as simdb_ops

revision = "n0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    simdb_ops.ensure_schema()
    {after}
"""


def _offline_project(tmp_path: Path, after: str = "") -> Path:
    (tmp_path / "versions").mkdir()
    (tmp_path / "env.py").write_text(OFFLINE_ENV)
    (tmp_path / "script.py.mako").write_text("")
    (tmp_path / "versions" / "n0001.py").write_text(OFFLINE_REVISION.format(after=after))
    return tmp_path


def test_offline_mode_writes_simdbs_schema_into_the_script(empty_db: str, tmp_path: Path) -> None:
    config = _config(_offline_project(tmp_path))
    config.output_buffer = io.StringIO()
    command.upgrade(config, "head", sql=True)
    script = config.output_buffer.getvalue()
    assert script.count("BEGIN;") == 1 and script.count("COMMIT;") == 1  # the user's one transaction
    assert "CREATE TABLE simdb._indexes" in script
    assert f"UPDATE simdb._alembic_version SET version_num='{schema.HEAD}'" in script
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(script.encode())  # (the script as psql would run it)
        assert schema.current_revision(conn) == schema.HEAD
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("n0001",)
        assert conn.execute("SELECT simdb.hamming(0, 7)").fetchone() == (3,)


def test_offline_mode_refuses_operations_that_read_the_database(tmp_path: Path) -> None:
    after = 'simdb_ops.create_index("notes")'
    config = _config(_offline_project(tmp_path, after))
    config.output_buffer = io.StringIO()
    with pytest.raises(SimdbError, match=r"simdb_ops\.create_index\(\) reads the database first") as raised:
        command.upgrade(config, "head", sql=True)
    assert raised.value.hint == (
        "run this migration online (alembic upgrade head), or the simdb CLI against the database"
    )


ONLINE_ENV = """
from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()
"""

SYNCING_REVISION = """
import sqlalchemy as sa
from alembic import op

from simdb import alembic as simdb_ops

revision = "s0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    notes = op.create_table("notes", sa.Column("id", sa.Integer, primary_key=True), sa.Column("body", sa.Text))
    op.bulk_insert(notes, [{"id": i, "body": f"note {i} about things"} for i in range(20)])
    simdb_ops.ensure_schema()
    simdb_ops.attach_index("notes_dups", table="public.notes", key_column="id", text_column="body", sync=True)
"""


def test_attach_index_with_sync_refuses_a_driver_without_bulk_copy(empty_db: str, tmp_path: Path) -> None:
    (tmp_path / "versions").mkdir()
    (tmp_path / "env.py").write_text(ONLINE_ENV)
    (tmp_path / "versions" / "s0001.py").write_text(SYNCING_REVISION)
    with pytest.raises(SimdbError) as raised:
        _migrate(_url(empty_db, "psycopg2"), lambda config: command.upgrade(config, "head"), tmp_path)
    assert str(raised.value) == (
        "attach_index('notes_dups', sync=True) fills the index with a bulk copy, which needs psycopg 3"
        " (this migration runs on psycopg2) (leave sync off and run `simdb sync notes_dups` after the"
        " migration, or run the migration on postgresql+psycopg://)"
    )
    with psycopg.connect(empty_db) as conn:  # the migration's transaction rolled back, whole
        gone = conn.execute("SELECT to_regclass('public.notes'), to_regnamespace('simdb')").fetchone()
        assert gone == (None, None)


def test_the_bridge_answers_as_psycopg_does(empty_db: str) -> None:
    """The same statements and values through psycopg 3 and through the bridge on psycopg2."""
    statement = (
        "SELECT %s::text, %s, %s::numeric, length(%s), %s = ANY(%s), %s::text[], %s::integer IS NULL,"
        " 'a%%b', decode('00ff', 'hex'), 'r'::\"char\""
    )
    values = ("it's %s", 7, 2**64 - 1, BitString(5, 128), "b", ["a", "b"], [], None)
    named = "SELECT %(n)s + 1, %(t)s"
    with psycopg.connect(empty_db) as conn:
        expected = [
            conn.execute(statement, values).fetchone(),
            conn.execute(named, {"n": 1, "t": "x"}).fetchone(),
        ]
    engine = create_engine(_url(empty_db, "psycopg2"), poolclass=NullPool)
    with engine.connect() as connection:
        bridge = sabridge.psycopg_of(connection)
        assert isinstance(bridge, sabridge.Bridge)
        got = [
            bridge.execute(statement, values).fetchone(),
            bridge.execute(named, {"n": 1, "t": "x"}).fetchone(),
        ]
        with bridge.cursor(row_factory=dict_row) as cursor:
            assert cursor.execute("SELECT 1 AS one, 'x' AS two").fetchall() == [{"one": 1, "two": "x"}]
    engine.dispose()
    assert got == expected
    assert expected[0] == ("it's %s", 7, 2**64 - 1, 128, True, [], True, "a%b", b"\x00\xff", "r")
