"""Keep a long-running job on the database (sync --watch) going when its connection is lost.

A server restart, a failover or pg_terminate_backend ends a connection; the job's own state is in
the database (a queue of changed keys, or NULL sketches), so starting it again on a new connection
loses nothing. `keep_connected` says so in one line per outage, reconnects with exponential
backoff, and runs the job again; any other error ends it as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

from simdb.db.connection import Connection
from simdb.errors import DatabaseUnavailable

FIRST_PAUSE_S = 0.5
LONGEST_PAUSE_S = 30.0
# What libpq says of a connection that dropped mid-statement (no SQLSTATE), as the CLI reads it.
_LIBPQ_DROPPED = ("server closed the connection unexpectedly", "SSL SYSCALL error", "could not receive data")
# The server's own words for it: class 08 (connection exception), and the shutdown codes
# (admin_shutdown: pg_terminate_backend or a fast shutdown; crash_shutdown; cannot_connect_now).
_SHUTDOWN = {"57P01", "57P02", "57P03"}


def lost(error: BaseException) -> bool:
    """Whether `error` says the connection went (or cannot be made now), not that a statement failed."""
    if isinstance(error, DatabaseUnavailable):
        return True
    if not isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    if any(words in str(error) for words in _LIBPQ_DROPPED):
        return True
    state = error.sqlstate
    return state is None or state.startswith("08") or state in _SHUTDOWN


def keep_connected(
    run: Callable[[Connection], None],
    conn: Connection,
    connect: Callable[[], Connection],
    say: Callable[[str], None],
    *,
    stop: Callable[[], bool] | None = None,
    first_pause: float = FIRST_PAUSE_S,
    longest_pause: float = LONGEST_PAUSE_S,
) -> None:
    """Run `run(conn)` until it returns; each time its connection is lost, `say` one line, get a
    new connection from `connect` (waiting `first_pause` seconds, doubling up to `longest_pause`,
    between attempts) and run it again on that one. Connections made here are closed here; `stop()`
    ends the wait for the server."""
    current = conn
    try:
        while True:
            try:
                run(current)
                return
            except (psycopg.Error, DatabaseUnavailable) as error:
                if not lost(error):
                    raise
                say(
                    f"lost the connection to the database ({_first_line(error)}); reconnecting,"
                    f" {first_pause:g} s to {longest_pause:g} s apart, and syncing what changed meanwhile"
                )
            if current is not conn:
                current.close()
            replaced = _reconnect(connect, stop, first_pause, longest_pause)
            if replaced is None:
                return
            current = replaced
    finally:
        if current is not conn:
            current.close()


def _reconnect(
    connect: Callable[[], Connection], stop: Callable[[], bool] | None, first: float, longest: float
) -> Connection | None:
    """A new connection, tried with exponential backoff until one is made (None: `stop()` said so)."""
    pause = first
    while not (stop is not None and stop()):
        time.sleep(pause)
        try:
            return connect()
        except (psycopg.Error, DatabaseUnavailable) as error:
            if not lost(error):
                raise
        pause = min(pause * 2, longest)
    return None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
