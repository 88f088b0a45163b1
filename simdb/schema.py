"""simdb's own schema in the database, owned by Alembic and migrated on first use.

Alembic and SQLAlchemy are imported only when a migration runs: together they take about half a
second to import, which every other command (and `simdb --help`) would otherwise pay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.db.resources import resource_dir
from simdb.errors import SchemaMissing, SchemaNewer
from simdb.index import v1_upgrade as layout
from simdb.index.names import VERSION_TABLE, in_schema, qualified

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Connection as SAConnection

HEAD = "0020"  # tests check that this is the head of migrations/versions


def alembic_config() -> Config:
    """An Alembic Config for the migrations shipped with simdb."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resource_dir("migrations")))
    return config


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(conn: Connection) -> str | None:
    """The schema revision in the database, or None before the first migration."""
    version_table = qualified(VERSION_TABLE)
    if conn.execute("SELECT to_regclass(%s)", (version_table,)).fetchone() == (None,):
        return None
    row = conn.execute(sql.SQL("SELECT version_num FROM {}").format(in_schema(VERSION_TABLE))).fetchone()
    return None if row is None else str(row[0])


def ensure_schema(conn: Connection, *, create: bool = True) -> bool:
    """Migrate to HEAD when the database is behind; returns True if it ran migrations. Without
    `create`, a database that has no simdb schema at all is an error instead (SchemaMissing)."""
    revision = current_revision(conn)
    if revision == HEAD:
        return False
    if revision is not None and revision > HEAD:  # (revisions are numbered with four digits)
        raise SchemaNewer(
            f"the simdb schema in database {conn.info.dbname!r} is at revision {revision}, newer than"
            f" this simdb knows ({HEAD}): a newer simdb upgraded it",
            "upgrade simdb (pip install -U simdb-pg), or connect to another database",
        )
    if revision is None and not create:
        raise SchemaMissing(
            f"no simdb schema in database {conn.info.dbname!r}",
            "create one with `simdb init` or `simdb create NAME`, or connect to the database that"
            " holds your indexes (--dsn, SIMDB_DSN)",
        )
    # in the caller's transaction, which its owner commits or rolls back; in autocommit mode in
    # one of its own, then layout v2's rewrites one transaction each (simdb.index.v1_upgrade)
    with conn.transaction() if conn.autocommit else contextlib.nullcontext():
        migrate(conn, "head")
    layout.finish_all(conn)
    return True


def migrate(conn: Connection, revision: str, *, down: bool = False) -> None:
    """Run simdb's migrations up (or `down`) to `revision` on `conn`, in its current transaction,
    which this never commits or rolls back (env.py's advisory lock, held to its end, makes
    concurrent first runs migrate one after another)."""
    from alembic import command

    from simdb.db.borrowed import borrowed

    step = command.downgrade if down else command.upgrade
    with borrowed(conn) as connection:
        run_alembic(connection, lambda config: step(config, revision))


def run_alembic(
    connection: SAConnection | None, action: Callable[[Config], None], *, script: TextIO | None = None
) -> None:
    """Run an Alembic command of simdb's history on a SQLAlchemy connection, in its transaction,
    or (no connection) write its statements to `script`, an offline migration's output.

    Alembic keeps its `op` and `context` in module-level proxies, and a run removes them when it
    ends; inside a user's own migration, put theirs back so the rest of it still works.
    """
    import alembic.context
    import alembic.op

    config = alembic_config()
    config.attributes["connection"] = connection
    config.attributes["nested"] = True
    config.output_buffer = script
    saved = [getattr(module, "_proxy", None) for module in (alembic.op, alembic.context)]
    try:
        action(config)
    finally:
        for proxy in saved:
            if proxy is not None:
                proxy._install_proxy()


def upgrade(dsn: str, revision: str = "head", *, password: str | None = None) -> None:
    """Run simdb's migrations up to `revision` in one transaction, on a connection of our own;
    then finish moving indexes to layout v2, one transaction each (see simdb.index.v1_upgrade)."""
    with _connect(dsn, password) as conn:
        with conn.transaction():
            migrate(conn, revision)
        layout.finish_all(conn)


def downgrade(dsn: str, revision: str = "base", *, password: str | None = None) -> None:
    with _connect(dsn, password) as conn, conn.transaction():
        migrate(conn, revision, down=True)


def _connect(dsn: str, password: str | None) -> Connection:
    if password:
        return psycopg.connect(dsn, autocommit=True, password=password)
    return psycopg.connect(dsn, autocommit=True)
