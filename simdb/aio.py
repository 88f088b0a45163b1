"""simdb's Python API on a psycopg AsyncConnection: load an index, query it, write its rows,
sync an attached one.

Each function runs the statements its sync counterpart builds (query.near_statement,
ingest.upsert_plan, index.loading, ...), so both give the same answers; an index is given by
name (loaded with the same catalog reads as index.get, then kept while the catalog's version of
it stays the same) or as the Index object index.get returns. Texts are sketched off the event
loop when they would block it: see `sketch`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg import conninfo, sql
from psycopg.rows import TupleRow, dict_row, tuple_row

from simdb import ingest, query, warmup
from simdb.api import Document, sketch_of
from simdb.db import connection
from simdb.follow import keep
from simdb.follow.base import Synced
from simdb.index import catalog
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index, Sketch
from simdb.index.placement import Writes
from simdb.query import Filters, Match, Stored

AsyncConnection = psycopg.AsyncConnection[TupleRow]
IndexLike = Index | str  # an index, or its name
T = TypeVar("T")

# A text longer than this many characters is sketched in a worker thread: past it, a sketch takes
# longer than a hop to a thread (a 1.5 MB text, from half a second to seconds).
SKETCH_ON_LOOP_CHARS = 4096
SketchKind = tuple[str, str, int, int]  # (mode, features, spec version, bits): the kernels a sketch calls
_warmed: set[SketchKind] = set()  # the kinds whose kernels this process has loaded (in a worker thread)
_loaded: dict[tuple[str, str, str, str, str], tuple[str, Index]] = {}  # (server, database, user,
# index) -> (catalog version, index): see `cached`


async def run(conn: AsyncConnection, reads: catalog.Reads[T]) -> T:
    """The result of catalog reads (catalog.run, awaited)."""
    try:
        read = next(reads)
        while True:
            async with conn.cursor(row_factory=dict_row if read.dicts else tuple_row) as cursor:
                await cursor.execute(read.text, read.params)
                rows: list[Any] = await cursor.fetchall()
            read = reads.send(rows)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def get(conn: AsyncConnection, name: str) -> Index:
    """index.get: an index's parameters, or IndexNotFound."""
    return await run(conn, indexes.loading(name))


async def resolve(conn: AsyncConnection, index: IndexLike) -> Index:
    """The index itself, loaded if given by name (`cached`)."""
    return await cached(conn, index) if isinstance(index, str) else index


async def cached(conn: AsyncConnection, name: str) -> Index:
    """Index NAME as `get` loads it, kept per database (so shared by a pool's connections) and
    loaded again when the catalog's version of it changed (catalog.version_read: one read by key
    instead of the four or five of a load)."""
    info = conn.info
    key = (info.host, str(info.port), info.dbname, info.user, name)
    read = catalog.version_read(name)
    cursor = await conn.execute(read.text, read.params, prepare=True)  # (planned once per connection)
    found: list[tuple[str]] = await cursor.fetchall()
    if not found:
        _loaded.pop(key, None)
        return await get(conn, name)  # (a bad name or IndexNotFound, as get says it)
    version = found[0][0]
    hit = _loaded.get(key)
    if hit is not None and hit[0] == version:
        return hit[1]
    index = await get(conn, name)  # read after the version: a later change is seen by the next check
    _loaded[key] = (version, index)
    return index


def _kind(index: Index) -> SketchKind:
    return (index.mode, str(index.features), index.spec_version, index.bits)


def _needs_thread(index: Index, content: Document | None) -> bool:
    """Whether sketching `content` could block the loop: a long text, or the first text of its
    kind in this process (which loads numba and the kernels' machine code, about 0.8 s)."""
    return isinstance(content, str) and (len(content) > SKETCH_ON_LOOP_CHARS or _kind(index) not in _warmed)


def _warm(index: Index) -> None:
    """Load the kernels this index's sketches call (in a worker thread), once per kind."""
    kind = _kind(index)
    if kind not in _warmed:
        warmup.warm_sketch(index.sketch)
        _warmed.add(kind)


async def sketch(index: Index, value: Document | None, text: str | None = None) -> Sketch:
    """api.sketch_of without blocking the event loop: a text longer than SKETCH_ON_LOOP_CHARS,
    or the first of its kind in this process, is sketched in a worker thread, the kernels loaded
    there too; a short text after that, or a sketch given as such, takes microseconds in place."""
    if not _needs_thread(index, text if text is not None else value):
        return sketch_of(index, value, text)

    def work() -> Sketch:
        _warm(index)
        return sketch_of(index, value, text)

    return await asyncio.to_thread(work)


async def sketches(index: Index, documents: Mapping[str, Document]) -> dict[str, Sketch]:
    """{key: sketch} of {key: text or sketch}, sketched as `sketch` does (in one worker thread
    when any text needs one)."""

    def work() -> dict[str, Sketch]:
        _warm(index)
        return {key: sketch_of(index, value) for key, value in documents.items()}

    if any(_needs_thread(index, value) for value in documents.values()):
        return await asyncio.to_thread(work)
    return {key: sketch_of(index, value) for key, value in documents.items()}


async def near(
    conn: AsyncConnection,
    index: IndexLike,
    value: Sketch,
    max_distance: int | None = None,
    filters: Filters | None = None,
    *,
    min_similarity: float | None = None,
    limit: int | None = None,
) -> list[Match]:
    """query.near: rows near a sketch, nearest first, then by key."""
    loaded = await resolve(conn, index)
    statement = query.near_statement(
        loaded, value, loaded.cutoff(max_distance, min_similarity), filters, limit
    )
    cursor = await conn.execute(statement.text, statement.params, prepare=statement.prepare)
    return query.matches(loaded, await cursor.fetchall())


async def stored(conn: AsyncConnection, index: IndexLike, key: str) -> Stored | None:
    """query.stored: the sketch, size and extension stored under a key, or None."""
    loaded = await resolve(conn, index)
    statement = query.stored_statement(loaded, key)
    cursor = await conn.execute(statement.text, statement.params)
    return query.stored_row(loaded, await cursor.fetchone())


async def near_key(
    conn: AsyncConnection,
    index: IndexLike,
    key: str,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    limit: int | None = None,
) -> list[Match]:
    """query.near_key: rows near the row stored under `key` (itself included)."""
    loaded = await resolve(conn, index)
    value = query.found_sketch(loaded, key, await stored(conn, loaded, key))
    return await near(conn, loaded, value, max_distance, min_similarity=min_similarity, limit=limit)


async def store(
    conn: AsyncConnection, index: IndexLike, batch: Mapping[str, Sketch], *, new_keys: bool = False
) -> tuple[int, int]:
    """ingest.store: upsert {key: sketch} in one transaction; returns (inserted, updated)."""
    rows = [ingest.Row(key, sketch) for key, sketch in batch.items()]
    return await store_rows(conn, index, rows, new_keys=new_keys)


async def store_rows(
    conn: AsyncConnection, index: IndexLike, rows: Sequence[ingest.Row], *, new_keys: bool = False
) -> tuple[int, int]:
    """ingest.store_rows: upsert rows in one transaction; returns (inserted, updated). An index
    that follows an application's table refuses it, as ingest does (storage.refuse_writes)."""
    loaded = await resolve(conn, index)
    loaded.storage.refuse_writes(loaded, "store")
    cursor = conn.cursor()
    plan = ingest.upsert_plan(loaded, cursor, rows)
    if new_keys and loaded.placement.bulk_writes:
        try:
            async with conn.transaction():
                await _copy(cursor, loaded.table, plan)
            return len(plan.rows), 0
        except psycopg.errors.UniqueViolation:
            pass  # a key stored already: upsert as below
    async with conn.transaction():
        await conn.execute(plan.create_stage)
        await _copy(cursor, plan.stage, plan)
        counted = await _run(conn, plan.upsert)
        inserted, updated = plan.counts(await counted.fetchone())
        if inserted + updated < len(plan.rows):  # some rows were left as they were: they are seen too
            await conn.execute(ingest.mark_seen_statement(loaded), (plan.keys,))
    return inserted, updated


async def _copy(cursor: psycopg.AsyncCursor[Any], table: sql.Composable, plan: ingest.UpsertPlan) -> None:
    """ingest.copy_rows, awaited: the plan's rows into `table`."""
    async with cursor.copy(ingest.copy_statement(table, plan.columns)) as copy:
        copy.set_types(plan.types)
        for row in plan.rows:
            await copy.write_row(row)


async def delete(conn: AsyncConnection, index: IndexLike, keys: Iterable[str]) -> int:
    """ingest.delete: remove the rows of these keys in one transaction; returns how many existed."""
    writes, wanted = ingest.delete_writes(await resolve(conn, index), keys)
    async with conn.transaction():
        cursor = await _run(conn, writes, (wanted,))
    return cursor.rowcount


async def _run(conn: AsyncConnection, writes: Writes, parameters: Any = None) -> psycopg.AsyncCursor[Any]:
    """Writes.run, awaited: the write's cursor."""
    for statement in writes.before:
        await conn.execute(statement)
    cursor = await conn.execute(writes.write, parameters)
    for statement in writes.after:
        await conn.execute(statement)
    return cursor


async def sync(conn: AsyncConnection, name: str, *, full: bool = False, jobs: int = 1) -> Synced:
    """keep.sync: bring attached index NAME up to date with its table. It runs the sync API
    itself in a worker thread, on a connection of its own to conn's database (conn's parameters,
    password included): a sync sketches documents, CPU work that must not block the event loop."""
    info = conn.info
    dsn = conninfo.make_conninfo(info.dsn, password=info.password) if info.password else info.dsn
    target = connection.Target(dsn, "the async connection's parameters")

    def work() -> Synced:
        with connection.connect(target) as own:
            return keep.sync(own, name, full=full, jobs=jobs)

    return await asyncio.to_thread(work)


class AsyncDatabase:
    """An async connection to a database with simdb's schema, for bound indexes (`index`)."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def index(self, name: str) -> AsyncBoundIndex:
        """Index NAME, bound to this connection."""
        return AsyncBoundIndex(self.conn, await get(self.conn, name))

    async def close(self) -> None:
        await self.conn.close()

    async def __aenter__(self) -> AsyncDatabase:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()


async def connect(dsn: str | None = None) -> AsyncDatabase:
    """An async connection (autocommit: simdb opens its own transactions) to the database the
    DSN names, or SIMDB_DSN, DATABASE_URL, PG* variables, as the CLI finds it."""
    target = connection.resolve(dsn)
    try:
        conn = await psycopg.AsyncConnection.connect(
            target.dsn, autocommit=True, connect_timeout=connection.CONNECT_TIMEOUT_S
        )
    except (psycopg.ProgrammingError, psycopg.OperationalError) as error:
        raise connection.unavailable(target, error) from error
    return AsyncDatabase(conn)


class AsyncBoundIndex:
    """An index and an async connection: simdb.api.BoundIndex, awaited."""

    def __init__(self, conn: AsyncConnection, index: Index) -> None:
        self.conn = conn
        self.index = index

    async def near(
        self,
        value: Sketch | None = None,
        *,
        text: str | None = None,
        k: int | None = None,
        min_similarity: float | None = None,
        limit: int | None = None,
    ) -> list[Match]:
        """Rows near a sketch or a text (one of them), within k bits or at min_similarity."""
        found = await sketch(self.index, value, text)
        return await near(self.conn, self.index, found, k, min_similarity=min_similarity, limit=limit)

    async def near_key(
        self, key: str, *, k: int | None = None, min_similarity: float | None = None, limit: int | None = None
    ) -> list[Match]:
        """Rows near the row stored under `key` (itself included)."""
        return await near_key(self.conn, self.index, key, k, min_similarity=min_similarity, limit=limit)

    async def add(self, documents: Mapping[str, Document]) -> tuple[int, int]:
        """Store {key: text or sketch}; returns (inserted, updated)."""
        return await store(self.conn, self.index, await sketches(self.index, documents))

    async def delete(self, keys: Iterable[str]) -> int:
        """Remove these keys' rows; returns how many existed."""
        return await delete(self.conn, self.index, keys)

    async def sync(self, *, full: bool = False) -> Synced:
        """Bring an attached index up to date with the table it follows (`sync` above)."""
        return await sync(self.conn, self.index.name, full=full)
