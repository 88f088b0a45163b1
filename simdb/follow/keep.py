"""Keep an attached index current with the table it follows: attach, sync, reindex, status, and
one watch loop for every index.

Each storage kind follows its table its own way, behind one interface (base.Follower): an index
in the application's own column fills the sketches its triggers cleared (simdb.follow.app_column); a
side table applies its queue of changes, or compares the whole table (simdb.follow.queue on
simdb.follow.side). FOLLOWERS names them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from simdb import ingest
from simdb.db import reconnect
from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, during_interrupt
from simdb.follow import app_column, queue, side
from simdb.follow.base import Follower, Progress, Status, Synced
from simdb.index import catalog, names, tables
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index, Spec
from simdb.index.storage import InTable, SideTable
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS
from simdb.sketch.features import DEFAULT_FEATURES, Features

# Storage kind -> how its indexes follow their table. An index of simdb's own table follows none:
# the side table's follower says so ("not attached to a table").
FOLLOWERS: dict[str, Follower] = {InTable.kind: app_column.FOLLOWER, SideTable.kind: queue.FOLLOWER}


def follower(index: Index) -> Follower:
    """How `index` follows its table."""
    return FOLLOWERS.get(index.storage.kind, queue.FOLLOWER)


def attach(
    conn: Connection,
    name: str,
    table: str,
    key_column: str,
    text_column: str,
    condition: str | None = None,
    spec: Spec | None = None,
    *,
    features: Features = DEFAULT_FEATURES,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    cascade: bool = False,
    triggers: bool = True,
) -> Index:
    """Create index NAME over an existing table: everything is checked first (the table, the
    columns' types, the --where condition, unique keys), then created in one transaction.
    `cascade`: index rows go with their source row at once (a foreign key; see the module).
    `triggers`: triggers on the table queue its changes for sync (simdb.follow.queue); without, each
    sync compares the whole table with the index."""
    schema, relation = tables.parse_table(table)
    source = side.Source(schema, relation, key_column, text_column, condition)
    key_type = side.validate(conn, source, cascade)
    side.refuse_on_citus(conn, source, cascade=cascade, triggers=triggers)
    with conn.transaction():
        index = indexes.create(conn, name, spec, features=features, expected_rows=expected_rows)
        catalog.add_source(conn, name, source)
        if cascade:
            conn.execute(
                sql.SQL(
                    "ALTER TABLE {index} ADD COLUMN source_key {type} UNIQUE"
                    " REFERENCES {source} ({key}) ON DELETE CASCADE ON UPDATE SET NULL"
                ).format(
                    index=index.table,
                    type=sql.SQL(key_type),
                    source=source.relation,
                    key=sql.Identifier(key_column),
                )
            )
        if triggers:
            queue.install(conn, index, source)
    return index


def sync(
    conn: Connection, name: str, progress: Progress = None, *, full: bool = False, jobs: int = 1
) -> Synced:
    """Bring index NAME up to date with the table it follows (`jobs` sketching threads; `full`:
    every row again, a repair): an index in the application's column fills its missing sketches,
    a side table applies its queue of changes, or compares the whole table."""
    index = indexes.get(conn, name)
    return follower(index).sync(conn, index, progress, full=full, jobs=jobs)


def first_sync(
    conn: Connection,
    name: str,
    progress: Callable[[int], object] | None = None,
    *,
    jobs: int = 1,
) -> Synced:
    """The sync that completes an attach (`sync`): if it fails (the database refuses a row, a
    --where condition fails on one, Ctrl-C), index NAME is dropped again, so that a failed attach
    leaves nothing half-made behind, and attaching again starts afresh."""
    try:
        return sync(conn, name, progress, jobs=jobs)
    except BaseException as error:
        with contextlib.suppress(psycopg.Error):
            indexes.drop(conn, name)
        lost = isinstance(error, psycopg.OperationalError) or during_interrupt(error)
        if isinstance(error, psycopg.Error) and not lost:
            raise InvalidParameter(
                f"the first sync of index {name!r} failed, so the index was dropped again:"
                f" {str(error).splitlines()[0]}",
                "fix what failed (a --where condition that fails on some row?), then attach again",
            ) from error
        raise


@dataclass
class ReindexReport:
    """What `simdb reindex` did: the rows moved from one spec version to another."""

    name: str
    from_version: int
    to_version: int
    rows: int

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def lines(self) -> list[str]:
        if self.from_version == self.to_version:
            return [f"index {self.name} already uses spec v{self.to_version}; nothing to do"]
        moved = f"{self.rows} rows moved from spec v{self.from_version} to v{self.to_version}"
        return [f"reindexed {self.name}: {moved}"]


def reindex(conn: Connection, name: str, progress: Progress = None, *, jobs: int = 1) -> ReindexReport:
    """Move attached index NAME to the newest spec of its mode, in place, batch by batch.

    Each batch re-sketches rows from the table's text and updates them in its own transaction, so
    queries keep running (they see some rows moved and some not until the end); the catalog
    switches to the new spec in the last transaction. An interrupted reindex leaves the old spec
    recorded, and running it again completes the move.
    """
    index = indexes.get(conn, name)
    target = index.upgraded()
    if target is None:
        return ReindexReport(name, index.spec_version, index.spec_version, 0)
    moved = follower(index).reindex(conn, index, target, progress, jobs=jobs)
    with conn.transaction():
        catalog.set_spec_version(conn, name, target.spec_version)
    ingest.vacuum(conn, index)
    return ReindexReport(name, index.spec_version, target.spec_version, moved)


def status(conn: Connection, name: str) -> Status:
    """How far index NAME is behind its table (InvalidParameter if it is not attached)."""
    index = indexes.get(conn, name)
    return follower(index).status(conn, index)


def watch(
    conn: Connection,
    name: str,
    interval: float,
    report: Callable[[Synced], None],
    rounds: int | None = None,
    *,
    jobs: int = 1,
    stop: Callable[[], bool] | None = None,
    connect: Callable[[], Connection] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> None:
    """Keep index NAME in sync until interrupted, `rounds` syncs were made, or `stop()` says so;
    `report` the first sync and each one that changed something.

    Where the table's triggers NOTIFY the index's channel (an index in the application's column,
    a side table with triggers), it LISTENs on a connection of its own and syncs at the start, on
    each notification, and every `interval` seconds in case one was missed: waiting costs nothing
    and reads no table. Otherwise it syncs every `interval` seconds.

    With `connect`, a lost connection (a server restart, pg_terminate_backend) does not end it:
    `say` gets one line per outage, and it reconnects with backoff and syncs again from the start
    (what changed meanwhile is queued, or a NULL sketch, so nothing is missed; `rounds` counts
    again on each connection)."""

    def watching(current: Connection) -> None:
        index = indexes.get(current, name)
        notified = follower(index).notifies(current, name)
        with _listening(current, name) if notified else contextlib.nullcontext() as listener:
            done = 0
            while True:
                result = sync(current, name, jobs=jobs)
                if done == 0 or result.changed:
                    report(result)
                done += 1
                if (rounds is not None and done >= rounds) or (stop is not None and stop()):
                    return
                if listener is None:
                    time.sleep(interval)
                else:
                    for _ in listener.notifies(timeout=interval, stop_after=1):
                        pass
                if stop is not None and stop():
                    return

    if connect is None:
        watching(conn)
        return
    reconnect.keep_connected(watching, conn, connect, say, stop=stop)


@contextlib.contextmanager
def _listening(conn: Connection, name: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection of its own, in autocommit, LISTENing on index NAME's channel: a commit
    notified while a sync runs is not missed."""
    password = conn.info.password
    options: dict[str, Any] = {"password": password} if password else {}
    with psycopg.connect(conn.info.dsn, autocommit=True, **options) as listener:
        listener.execute(sql.SQL("LISTEN {}").format(names.channel(name)))
        yield listener
