"""psycopg's connection surface over a SQLAlchemy connection, for any driver or none at all.

simdb's library speaks psycopg 3 (psycopg.sql statements, %s and %(name)s parameters). Inside an
Alembic migration the connection is SQLAlchemy's, over psycopg 3, psycopg2, asyncpg or async
psycopg, or no connection at all in offline mode (`alembic upgrade head --sql`). `psycopg_of`
gives the library a connection for each: psycopg 3's own, or a `Bridge` that renders each
statement with its values inline and runs it through SQLAlchemy (or writes it to the script).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from sqlalchemy.engine import Connection as SAConnection

from simdb.db.bit_string import BitString
from simdb.db.connection import Connection
from simdb.errors import SimdbError

_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?s|%%")
Params = Sequence[Any] | dict[str, Any] | None
_UNPARAMETERIZED = {"no_parameters": True}  # cursor.execute(text) alone: a '%' stays a '%'


def render(query: str | sql.Composable, params: Params = None) -> str:
    """The statement as psycopg would send it, each parameter written as a SQL literal."""
    text = query if isinstance(query, str) else query.as_string(None)
    if params is None:
        return text
    positional = iter(params) if not isinstance(params, dict) else iter(())

    def literal(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        value = params[match.group(1)] if match.group(1) else next(positional)  # type: ignore[index]
        if isinstance(value, BitString):  # (psycopg writes '...'::bit, which is bit(1))
            return sql.SQL("B{}").format(sql.Literal(format(value.value, f"0{value.bits}b"))).as_string(None)
        return sql.Literal(value).as_string(None)

    return _PLACEHOLDER.sub(literal, text)


class _Info:
    """The parts of psycopg's ConnectionInfo that simdb's messages and checks read."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self.transaction_status = psycopg.pq.TransactionStatus.INTRANS
        self.dsn = ""
        self.password = None

    @property
    def dbname(self) -> str:
        row = self._bridge.execute("SELECT current_database()").fetchone()
        return "" if row is None else str(row[0])

    def parameter_status(self, name: str) -> str | None:
        row = self._bridge.execute("SELECT current_setting(%s, true)", (name,)).fetchone()
        return None if row is None else row[0]


_CHAR_OID = 18  # PostgreSQL's one-byte "char" (pg_type.typcategory, pg_class.relkind): asyncpg gives bytes


def _char(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _plain(value: Any) -> Any:
    """A value as psycopg 3 returns it (psycopg2 gives bytea as a memoryview)."""
    return bytes(value) if isinstance(value, memoryview) else value


class _Cursor:
    """A cursor over the rows of the last statement (all fetched: a migration reads little)."""

    def __init__(self, bridge: Bridge, dicts: bool = False) -> None:
        self._bridge, self._dicts = bridge, dicts
        self._rows: list[Any] = []
        self.rowcount = -1

    def execute(self, query: str | sql.Composable, params: Params = None) -> _Cursor:
        columns, rows, self.rowcount = self._bridge.run(render(query, params))
        values = [tuple(_plain(value) for value in row) for row in rows]
        self._rows = [dict(zip(columns, row, strict=True)) for row in values] if self._dicts else values
        return self

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchmany(self, size: int = 1) -> list[Any]:
        taken, self._rows = self._rows[:size], self._rows[size:]
        return taken

    def fetchall(self) -> list[Any]:
        taken, self._rows = self._rows, []
        return taken

    def __iter__(self) -> Iterator[Any]:
        while self._rows:
            yield self._rows.pop(0)

    def copy(self, *_: Any, **__: Any) -> Any:
        raise SimdbError(
            "this step copies rows in bulk, which needs psycopg 3"
            f" (the migration runs on {self._bridge.driver})",
            "run `simdb sync NAME` after the migration instead, or run the migration with"
            " postgresql+psycopg://",
        )

    def close(self) -> None:
        self._rows = []

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Bridge:
    """What simdb's library calls on a psycopg connection, run on a SQLAlchemy connection in its
    transaction, or written to the migration's script when `output` is given (offline mode, where
    reads find no rows)."""

    autocommit = False
    adapters = psycopg.adapters  # (so that `x.as_string(bridge)` renders as with no connection)
    connection = None

    def __init__(self, bind: SAConnection | None, output: Callable[[str], None] = print) -> None:
        self._bind, self._output = bind, output
        self.driver = "offline mode (--sql)" if bind is None else bind.dialect.driver
        self.info = _Info(self)
        self._began = False

    def execute(self, query: str | sql.Composable, params: Params = None) -> _Cursor:
        return _Cursor(self).execute(query, params)

    def cursor(self, *, row_factory: Any = None, **_: Any) -> _Cursor:
        return _Cursor(self, dicts=row_factory is dict_row)

    @contextmanager
    def transaction(self, *, force_rollback: bool = False) -> Iterator[None]:
        """A savepoint, as psycopg's transaction() is inside a transaction (rolled back at its end
        with `force_rollback`, as psycopg's is)."""
        if self._bind is None:
            yield
            return
        savepoint = self._bind.begin_nested()
        try:
            yield
        except BaseException:
            savepoint.rollback()
            raise
        if force_rollback:
            savepoint.rollback()
        else:
            savepoint.commit()

    def run(self, text: str) -> tuple[list[str], Sequence[Any], int]:
        """Column names, rows and row count of one statement (a script: several, no rows)."""
        if self._bind is None:
            self._output(text)
            return [], [], -1
        if self.driver == "asyncpg" and ";" in text.strip().rstrip(";"):
            return self._run_script(text)
        result = self._bind.exec_driver_sql(text, execution_options=_UNPARAMETERIZED)
        self._began = True
        if not result.returns_rows:
            return [], [], result.rowcount
        chars = [column[1] == _CHAR_OID for column in result.cursor.description]
        rows = [[_char(v) if char else v for v, char in zip(row, chars, strict=True)] for row in result]
        return list(result.keys()), rows, result.rowcount

    def _run_script(self, text: str) -> tuple[list[str], Sequence[Any], int]:
        """Several statements in one: asyncpg prepares every statement SQLAlchemy sends, and a
        prepared statement holds one, so they go through asyncpg's simple query protocol."""
        from sqlalchemy.util.concurrency import await_

        bind = cast(SAConnection, self._bind)
        if not self._began:  # (SQLAlchemy's asyncpg adapter begins its transaction on first use)
            bind.exec_driver_sql("SELECT 1")
            self._began = True
        await_(bind.connection.driver_connection.execute(text))  # type: ignore[union-attr]
        return [], [], -1


def psycopg_of(bind: SAConnection | None, output: Callable[[str], None] = print) -> Connection:
    """The psycopg connection under `bind` when it has one (the same transaction), else a Bridge
    (its statements through `bind`, or, with no bind, to `output`)."""
    if bind is not None:
        driver = bind.connection.driver_connection
        if isinstance(driver, psycopg.Connection):
            return driver
    return cast(Connection, Bridge(bind, output))


def offline() -> bool:
    """Whether the running Alembic migration writes a script (--sql) instead of running."""
    import alembic.op

    return bool(alembic.op.get_context().as_sql)


def migration_connection() -> Connection:
    """The connection for simdb's library inside the running Alembic migration (its own
    transaction; in offline mode, each statement goes to the script)."""
    import alembic.op

    impl = alembic.op.get_context().impl

    def output(text: str) -> None:
        text = text.strip()
        impl.static_output(text if text.endswith(";") else text + impl.command_terminator)

    return psycopg_of(None if offline() else alembic.op.get_bind(), output)
