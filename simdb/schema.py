"""simdb's own schema in the database, owned by Alembic and migrated on first use.

Alembic and SQLAlchemy are imported only when a migration runs: together they take about half a
second to import, which every other command (and `simdb --help`) would otherwise pay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from simdb import layout
from simdb.connection import Connection
from simdb.errors import SchemaMissing, SchemaNewer
from simdb.names import VERSION_TABLE, in_schema, qualified
from simdb.resources import resource_dir

if TYPE_CHECKING:
    from alembic.config import Config

HEAD = "0012"  # tests check that this is the head of migrations/versions


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
    if not conn.autocommit:
        conn.commit()
    upgrade(conn.info.dsn, password=conn.info.password)
    return True


def upgrade(dsn: str, revision: str = "head", *, password: str | None = None) -> None:
    """Run simdb's migrations up to `revision` in one transaction, on a connection of our own;
    then finish moving indexes to layout v2, one transaction each (see simdb.layout)."""
    from alembic import command

    _run(dsn, password, lambda config: command.upgrade(config, revision))
    with _connect(dsn, password) as conn:
        conn.autocommit = True
        layout.finish_all(conn)


def downgrade(dsn: str, revision: str = "base", *, password: str | None = None) -> None:
    from alembic import command

    _run(dsn, password, lambda config: command.downgrade(config, revision))


def _connect(dsn: str, password: str | None) -> Connection:
    return psycopg.connect(dsn, password=password) if password else psycopg.connect(dsn)


def _run(dsn: str, password: str | None, action: Callable[[Config], None]) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: _connect(dsn, password), poolclass=NullPool
    )
    config = alembic_config()
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            action(config)
    finally:
        engine.dispose()
