"""Where the database comes from: a DSN the user gives, libpq's PG* variables, or the embedded server."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import psycopg
from psycopg.rows import TupleRow

from simdb.errors import DatabaseUnavailable

DSN_VARIABLES = ("SIMDB_DSN", "DATABASE_URL")
LIBPQ_VARIABLES = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")
CONNECT_TIMEOUT_S = 10

Connection = psycopg.Connection[TupleRow]


@dataclass(frozen=True)
class Target:
    """A resolved connection: the conninfo string and where it came from (for messages)."""

    dsn: str
    source: str


def resolve(dsn: str | None = None, *, start_embedded: bool = True) -> Target:
    """--dsn, then SIMDB_DSN, then DATABASE_URL, then PG* variables, else the embedded server."""
    if dsn:
        return Target(_libpq_url(dsn), "--dsn")
    for name in DSN_VARIABLES:
        value = os.environ.get(name)
        if value:
            return Target(_libpq_url(value), name)
    present = [name for name in LIBPQ_VARIABLES if os.environ.get(name)]
    if present:
        return Target("", "/".join(present))
    from simdb.db.embedded import EmbeddedServer  # (loaded only when no connection is given)

    server = EmbeddedServer()
    url = server.start() if start_embedded else server.url()
    return Target(url, f"the embedded server in {server.home}")


def _libpq_url(url: str) -> str:
    """Accept SQLAlchemy-style URLs too (postgresql+psycopg://...): libpq wants plain postgresql://."""
    return re.sub(r"^(postgres(?:ql)?)\+\w+://", r"\1://", url.strip())


def connect(target: Target, *, autocommit: bool = True) -> Connection:
    """Open a psycopg connection (autocommit: simdb opens its own transactions), or DatabaseUnavailable."""
    try:
        return psycopg.connect(target.dsn, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S)
    except (psycopg.ProgrammingError, psycopg.OperationalError) as error:
        raise unavailable(target, error) from error


def unavailable(target: Target, error: psycopg.Error) -> DatabaseUnavailable:
    """What a failed connect says (simdb.aio's too): a string that does not parse, or no server."""
    if isinstance(error, psycopg.ProgrammingError):
        return DatabaseUnavailable(
            f"bad connection string ({target.source}): {str(error).strip().splitlines()[0]}",
            "write a URL like postgresql://user@host:5432/dbname, or key=value pairs: host=... dbname=...",
        )
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return DatabaseUnavailable(
        f"cannot connect to PostgreSQL ({target.source}): {first}",
        "check that the server is up and the DSN is right; with no DSN simdb uses its own server",
    )
