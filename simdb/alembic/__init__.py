"""Operations for the user's own Alembic migrations: simdb's schema and indexes, in their history.

    from simdb import alembic as simdb_ops

    def upgrade() -> None:
        op.create_table("articles", ...)
        simdb_ops.ensure_schema()
        simdb_ops.attach_index("articles_dups", table="public.articles", key_column="id",
                               text_column="body")

    def downgrade() -> None:
        simdb_ops.drop_index("articles_dups")
        op.drop_table("articles")

Everything runs on the migration's own connection and transaction, so it commits or rolls back
with the rest of the migration, whatever its driver (psycopg, psycopg2, asyncpg, async psycopg).
In offline mode (`alembic upgrade head --sql`) ensure_schema writes simdb's schema to the script
(for a database without one); the other operations read the database first, and refuse.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import alembic.op
from alembic import command
from alembic.config import Config
from psycopg import sql

from simdb import schema
from simdb.db import sabridge
from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, SimdbError
from simdb.follow import app_column, keep
from simdb.index import catalog, names
from simdb.index import lifecycle as indexes
from simdb.index import v1_upgrade as layout

_log = logging.getLogger(__name__)  # shown with Alembic's own output (its WARNING level)


def _driver() -> Connection:
    """The connection simdb's library runs on: the migration's own, in its transaction."""
    return sabridge.migration_connection()


def _online(operation: str) -> Connection:
    """The migration's connection for an operation that reads the database before it writes."""
    if sabridge.offline():
        raise SimdbError(
            f"simdb_ops.{operation}() reads the database first, so it cannot be written to an"
            " offline (--sql) script",
            "run this migration online (alembic upgrade head), or the simdb CLI against the database",
        )
    return _driver()


def _run_simdb_migrations(action: Callable[[Config], None]) -> None:
    if sabridge.offline():
        script = alembic.op.get_context().impl.output_buffer
        schema.run_alembic(None, action, script=script)
    else:
        schema.run_alembic(alembic.op.get_bind(), action)


def ensure_schema() -> None:
    """Create or migrate simdb's schema (catalog and SQL functions) to the version this simdb needs
    (offline: the script creates it whole, for a database without one)."""
    if sabridge.offline():
        _run_simdb_migrations(lambda config: command.upgrade(config, "head", sql=True))
        return
    if schema.current_revision(_driver()) != schema.HEAD:
        _run_simdb_migrations(lambda config: command.upgrade(config, "head"))
        layout.finish_all(_driver())  # in the user's transaction (simdb.index.v1_upgrade says why it waits)


def drop_schema(*indexes: str, force: bool = False) -> None:
    """Remove simdb's schemas with the indexes named here (already dropped ones need no naming).

    The schema is shared: other applications, or people with the CLI, may keep indexes in it. Any
    index not named refuses the drop (listing them, nothing dropped) unless `force` is given.
    """
    driver = _online("drop_schema")
    present = catalog.index_names(driver) if schema.current_revision(driver) is not None else []
    others = [name for name in present if name not in indexes]
    if others and not force:
        raise SimdbError(
            f"simdb's schema holds indexes this migration did not name: {', '.join(others)}; "
            "nothing was dropped",
            "drop them first, name them (drop_schema('a', 'b')), or pass force=True to drop every index",
        )
    _run_simdb_migrations(lambda config: command.downgrade(config, "base"))
    for schema_name in (names.SCHEMA, names.INTERNAL_SCHEMA):
        _driver().execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema_name)))


def create_index(name: str, **options: Any) -> None:
    """simdb create NAME: the same arguments as simdb.index.create (spec, features, expected_rows)."""
    indexes.create(_online("create_index"), name, **options)


def attach_index(
    name: str,
    table: str,
    key_column: str,
    text_column: str | None = None,
    *,
    fingerprint_column: str | None = None,
    signature_column: str | None = None,
    sync: bool = False,
    **options: Any,
) -> None:
    """simdb attach NAME over an existing table: a side table following `text_column`, or, with
    `fingerprint_column` (`signature_column` for a jaccard index), an index in that column of the
    table (B-trees built in the migration's transaction; with `text_column` too, simdb fills the
    column). With `sync`, the rows are fingerprinted in the migration's transaction (a long
    migration for a large table); without, a warning in the migration's output says that the
    index holds nothing yet and to run `simdb sync NAME`."""
    driver = _online("attach_index")
    if sync and isinstance(driver, sabridge.Bridge):
        raise SimdbError(
            f"attach_index({name!r}, sync=True) fills the index with a bulk copy, which needs psycopg 3"
            f" (this migration runs on {driver.driver})",
            f"leave sync off and run `simdb sync {name}` after the migration,"
            " or run the migration on postgresql+psycopg://",
        )
    in_column = {"fingerprint": fingerprint_column, "signature": signature_column}
    given = [(kind, column) for kind, column in in_column.items() if column]
    if len(given) > 1 or not (given or text_column):
        raise InvalidParameter(
            f"attach_index({name!r}) takes text_column, or one of fingerprint_column and"
            " signature_column (with or without text_column)",
            "name the column the index reads",
        )
    if given:
        ((kind, column),) = given
        app_column.attach_in_table(
            driver, name, table, key_column, column, text_column, **options, sketch_kind=kind
        )
    else:
        keep.attach(driver, name, table, key_column, text_column or "", **options)
    if not text_column:
        return
    if sync:
        keep.sync(driver, name)
    else:
        _log.warning(
            "simdb index %s is attached to %s but holds no rows yet: run `simdb sync %s` "
            "(or attach_index(..., sync=True) to fill it in the migration)",
            name,
            table,
            name,
        )


def drop_index(name: str) -> None:
    """simdb drop NAME: the index table, its functions and catalog rows."""
    indexes.drop(_online("drop_index"), name)
