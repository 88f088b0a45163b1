"""SQLAlchemy over a psycopg connection simdb was handed: Alembic then runs simdb's migrations in
the caller's own transaction, and SQLAlchemy never commits, rolls back or closes that connection.

Imported only when a migration runs (SQLAlchemy is slow to import; see simdb.schema).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Connection as SAConnection
from sqlalchemy.pool import NullPool

from simdb.db.connection import Connection

_DRIVER = "simdb_borrowed"


class BorrowedDialect(PGDialect_psycopg):
    """psycopg's dialect, minus everything that ends a transaction or the connection: the one who
    lent the connection decides (SQLAlchemy rolls back after its first look at a connection, and
    when one goes back to its pool). No connect hook either: the connection is left as it was."""

    supports_statement_cache = True

    def on_connect(self) -> None:
        return None

    def do_rollback(self, dbapi_connection: Any) -> None:
        pass

    def do_commit(self, dbapi_connection: Any) -> None:
        pass

    def do_close(self, dbapi_connection: Any) -> None:
        pass


registry.register(f"postgresql.{_DRIVER}", __name__, BorrowedDialect.__name__)


@contextmanager
def borrowed(conn: Connection) -> Iterator[SAConnection]:
    """A SQLAlchemy connection over `conn`, inside a SQLAlchemy transaction (so that Alembic sees
    one outside itself and leaves it open): every statement runs in `conn`'s current transaction."""
    engine = create_engine(
        f"postgresql+{_DRIVER}://",
        creator=lambda: conn,
        poolclass=NullPool,
        pool_reset_on_return=None,
        use_native_hstore=False,  # (registering it would change the connection's adapters)
    )
    try:
        with engine.connect() as connection, connection.begin():
            yield connection
    finally:
        engine.dispose()
