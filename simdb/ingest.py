"""Write an index's rows: sketch documents (fingerprint or signature, by the index's mode) and load
them with COPY (one transaction per batch, idempotent per key), delete keys, prune rows not seen.

Every row records when it was last seen (`seen_at`): written, or found unchanged by an ingest.
Retention (`prune`) and the removal of files gone from a folder (`ingest --delete-missing`) go
by it, so a file re-ingested unchanged every night is never taken for an old one."""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

import psycopg
from psycopg import sql
from psycopg.abc import AdaptContext

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, during_interrupt
from simdb.index import names, texts
from simdb.index.modes import Index, Sketch
from simdb.index.placement import Writes
from simdb.sources.keys import key_problem, shown
from simdb.sources.readers import UNCHANGED, Document, Item, Scope

DEFAULT_BATCH = 2000
DEFAULT_BATCH_BYTES = 64 << 20  # a batch's documents hold at most this many bytes (one larger: alone)
T = TypeVar("T")


@dataclass
class Report:
    """What an ingest did: rows inserted, rows whose fingerprint changed, rows left as they were."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    repaired: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    bytes: int = 0  # input read and sketched
    passed_over: int = 0  # input skipped or unchanged: aliases, binary files, files not read again
    removed: int | None = None  # rows of files gone from the folders (--delete-missing), if it ran
    # where the time went (ingest only): read (files and records), sketch (fingerprinting, or
    # with --jobs waiting for the threads beyond reading), store (COPY and upsert), btrees (built
    # after a first load), vacuum
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def stored(self) -> int:
        return self.inserted + self.updated + self.unchanged

    def summary(self) -> str:
        skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
        line = (
            f"ingested {self.stored} documents: {self.inserted} new, {self.updated} updated, "
            f"{self.unchanged} unchanged; skipped {sum(self.skipped.values())}"
        )
        line += f" ({skipped})" if skipped else ""
        if self.repaired:
            line += f"; {self.repaired} had invalid UTF-8 replaced by U+FFFD"
        if self.removed is not None:
            line += f"; removed {self.removed} missing"
        return line

    def lines(self) -> list[str]:
        """The summary, then how much was read and how fast (when the time was taken), and apart
        from it the bytes passed over, which took no reading."""
        total = self.seconds.get("total")
        if total is None:
            return [self.summary()]
        rate = self.bytes / total / 1e6 if total > 0 else 0.0
        line = f"{self.summary()}; {self.bytes / 1e6:.1f} MB read in {total:.1f} s, {rate:.1f} MB/s"
        if self.passed_over:
            line += f"; {self.passed_over / 1e6:.1f} MB passed over (skipped or unchanged)"
        return [line]

    def as_dict(self) -> dict[str, object]:
        counts: dict[str, object] = {
            "inserted": self.inserted,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": dict(self.skipped),
            "repaired": self.repaired,
            "bytes": self.bytes,
            "bytes_passed_over": self.passed_over,
        }
        if self.removed is not None:
            counts["removed"] = self.removed
        if self.seconds:
            counts["seconds"] = {step: round(value, 4) for step, value in self.seconds.items()}
        return counts


def ingest(
    conn: Connection,
    index: Index,
    items: Iterable[Item],
    *,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[int], object] | None = None,
    jobs: int = 1,
    delete_missing: Scope | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    keep_text: bool = False,
) -> Report:
    """Store every document of `items` in `index`; a re-run with the same input changes nothing.

    Batches are sketched (by `jobs` threads when more than one), then copied and upserted in
    order, each in its own transaction, so an error or a kill loses at most the batches in
    flight, and running the same command again completes the work. Memory stays bounded: a
    batch holds at most `batch_size` documents and `batch_bytes` bytes of them (a larger
    document is a batch by itself), and at most two batches are read ahead. `progress` gets the
    bytes of input done: a skipped item's when it is passed over, a batch's part by part as it
    is sketched (not when read).

    A first load (the index is empty) copies its batches straight into the table and builds the
    B-trees once at the end (see _first_load); an interrupted one leaves that to the next run.
    With `delete_missing`, the rows of that scope (files under the folders read) that this
    ingest neither wrote nor found unchanged are removed at the end, unless a file or folder
    could not be read (its rows would look missing).

    `keep_text` makes the index keep its documents' texts (simdb.index.texts), from this ingest on;
    an index that keeps them keeps those of every ingest.
    """
    index.storage.refuse_writes(index, "ingest")
    if keep_text:
        texts.create(conn, index)
    report = Report()
    clock = report.seconds
    started = time.perf_counter()
    since = _database_now(conn)
    write(
        conn,
        index,
        items,
        report,
        batch_size=batch_size,
        batch_bytes=batch_bytes,
        progress=progress,
        jobs=jobs,
        keep_text=texts.keeps(conn, index),
    )
    if delete_missing is not None and not report.skipped["unreadable"]:
        report.removed = remove_unseen(conn, index, delete_missing, since)
    if report.inserted or report.updated or report.removed:
        began = time.perf_counter()
        vacuum(conn, index)
        clock["vacuum"] = time.perf_counter() - began
    clock["total"] = time.perf_counter() - started
    return report


def write(
    conn: Connection,
    index: Index,
    items: Iterable[Item],
    report: Report,
    *,
    batch_size: int = DEFAULT_BATCH,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    progress: Callable[[int], object] | None = None,
    jobs: int = 1,
    drop_empty: bool = False,
    keep_text: bool = False,
) -> None:
    """The one write pipeline of every source (files, records, an application table's rows):
    read, sketch (`jobs` threads) and store `items` in batches, counting into `report`, with a
    first load's B-trees built once at the end (see ingest). `drop_empty`: a document without
    shingles also leaves the index, in its batch's transaction (a table row whose text was emptied:
    its old sketch no longer describes it). `keep_text`: each batch's texts are kept too, in its
    transaction (simdb.index.texts)."""
    clock = report.seconds
    empty, deferred = _first_load(conn, index)
    try:
        _ingest(
            conn, index, items, report, batch_size, batch_bytes, progress, jobs, empty, drop_empty, keep_text
        )
    except Exception as error:
        if deferred and not during_interrupt(error):  # a rerun builds them if this fails too
            with contextlib.suppress(psycopg.Error):
                _build_btrees(conn, index, clock)
        raise
    if deferred:
        _build_btrees(conn, index, clock)


def _database_now(conn: Connection) -> datetime:
    """The server's clock (the time rows are stamped with), read outside any batch."""
    row = conn.execute("SELECT now()").fetchone()
    return cast(datetime, row[0]) if row else datetime.now().astimezone()


def _ingest(
    conn: Connection,
    index: Index,
    items: Iterable[Item],
    report: Report,
    batch_size: int,
    batch_bytes: int,
    progress: Callable[[int], object] | None,
    jobs: int,
    new_keys: bool,
    drop_empty: bool,
    keep_text: bool,
) -> None:
    """ingest's loop: read, sketch and store the batches, counting into `report`."""
    clock = report.seconds
    seen = functools.partial(touch, conn, index)
    batches = _batches(_timed(items, clock, "read"), batch_size, batch_bytes, report, progress, seen)
    for documents, values in _timed(sketched(batches, index, jobs, progress), clock, "sketch"):
        rows: dict[str, Row] = {}  # (a later record with the same key replaces the earlier one)
        kept: dict[str, str] = {}
        empty: list[str] = []
        for document, value in zip(documents, values, strict=True):
            if value is None:
                report.skipped["empty"] += 1
                empty.append(document.key)
                continue
            stream = document.stream
            report.repaired += document.repaired or (stream is not None and stream.repaired)
            report.updated += document.key in rows
            rows[document.key] = Row.of(document, value)
            if document.data is None and stream is None:  # (a text read whole: not bytes, not streamed)
                kept[document.key] = document.text
        began = time.perf_counter()
        with conn.transaction() if (drop_empty and empty) or keep_text else contextlib.nullcontext():
            if drop_empty and empty:
                remove(conn, index, empty)
            if rows:
                count_stored(
                    report, len(rows), store_rows(conn, index, list(rows.values()), new_keys=new_keys)
                )
            if keep_text:  # (a text not kept now would be stale: forgotten)
                texts.keep(conn, index, kept)
                texts.forget(conn, index, [key for key in rows if key not in kept])
        clock["store"] = clock.get("store", 0.0) + time.perf_counter() - began
    clock["sketch"] = clock.get("sketch", 0.0) - clock.get("read", 0.0)  # reading ran inside it


def _first_load(conn: Connection, index: Index) -> tuple[bool, bool]:
    """(empty, deferred): whether the index is empty, so that batches are copied straight into
    its table (store's new_keys), and whether this ingest builds the index's B-trees once at its
    end instead of updating them row by row, in which case they are dropped now.

    The B-trees are deferred when the index is empty (one build from all the rows costs far less
    than inserting each into every B-tree) or one of them is missing (a first load was
    interrupted); queries stay exact meanwhile, only slower. Both only on autocommit connections:
    in a caller's transaction the B-trees are left alone; and only the table's owner (or a member
    of its role) may drop and build them: a writer role's load updates them row by row.
    """
    if not conn.autocommit or not index.placement.bulk_writes:
        return False, False
    empty = is_empty(conn, index)
    owner = conn.execute(
        "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = %s::regclass",
        (index.table.as_string(conn),),
    ).fetchone()
    if owner != (True,):
        return empty, False
    btrees = [names.btree(index.name, column).as_string(conn) for column in index.columns]
    missing = conn.execute(  # (a query of its own: Citus refuses unnest beside a distributed table)
        "SELECT 1 FROM unnest(%s::text[]) AS btree (name) WHERE to_regclass(btree.name) IS NULL LIMIT 1",
        (btrees,),
    ).fetchone()
    if empty or missing:
        _drop_btrees(conn, index)
    return empty, empty or missing is not None


def is_empty(conn: Connection, index: Index) -> bool:
    """Whether the index holds no row."""
    return conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(index.table)).fetchone() is None


def _drop_btrees(conn: Connection, index: Index) -> None:
    """Drop the index's B-trees (those that exist), before a load that builds them afterwards."""
    for column in index.columns:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(names.btree(index.name, column)))


def _build_btrees(conn: Connection, index: Index, clock: dict[str, float]) -> None:
    """Build the B-trees _first_load dropped (each one that is missing). Under a lock that only
    one such build holds at a time: two first loads that end together would otherwise both find
    a B-tree missing and both create it (CREATE INDEX's own lock lets them)."""
    began = time.perf_counter()
    with conn.transaction():
        conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(index.table))
        _sort_memory(conn)
        for statement in index.btrees(if_missing=True):
            conn.execute(statement)
    clock["btrees"] = time.perf_counter() - began


def _timed(items: Iterable[T], clock: dict[str, float], step: str) -> Iterator[T]:
    """The items, adding the time spent producing each to clock[step]."""
    iterator = iter(items)
    while True:
        began = time.perf_counter()
        try:
            item = next(iterator)
        except StopIteration:
            return
        finally:
            clock[step] = clock.get(step, 0.0) + time.perf_counter() - began
        yield item


_SEEN_CHUNK = 5000  # keys of unchanged files marked seen in one statement


def _batches(
    items: Iterable[Item],
    size: int,
    max_bytes: int,
    report: Report,
    progress: Callable[[int], object] | None,
    seen: Callable[[list[str]], None],
) -> Iterator[list[Document]]:
    """Documents in lists of at most `size` documents and `max_bytes` bytes (held_bytes; a larger
    document is a list by itself); skips are counted (and reported to `progress`) on the way,
    and the keys of files passed over unchanged go to `seen`, a chunk at a time."""
    documents: list[Document] = []
    held = 0
    unchanged: list[str] = []
    for item in items:
        if isinstance(item, Document):
            report.bytes += item.consumed
            weight = held_bytes(item)
            if documents and held + weight > max_bytes:
                yield documents
                documents, held = [], 0
            documents.append(item)
            held += weight
        else:
            report.passed_over += item.consumed
            if item.reason == UNCHANGED:
                report.unchanged += 1
                unchanged.append(item.source)
            else:
                report.skipped[item.reason] += 1
            if progress is not None:
                progress(item.consumed)
        if len(unchanged) >= _SEEN_CHUNK:
            seen(unchanged)
            unchanged = []
        if len(documents) >= size:
            yield documents
            documents, held = [], 0
    if unchanged:
        seen(unchanged)
    if documents:
        yield documents


def held_bytes(document: Document) -> int:
    """What a document counts against a batch's bytes: the length of its content (characters
    of a text), or the size of a file it reads when it is sketched."""
    if document.stream is not None:
        return document.stream.size
    return len(document.data) if document.data is not None else len(document.text)


def sketched(
    batches: Iterator[list[Document]],
    index: Index,
    jobs: int,
    progress: Callable[[int], object] | None = None,
) -> Iterator[tuple[list[Document], list[Sketch | None]]]:
    """Each batch with its sketches, in input order; `progress` gets each part's bytes as it is
    sketched, so that a bar moves within a batch of large files.

    With jobs > 1, `jobs` threads sketch each batch in parts while this thread reads the next one
    and the caller stores the last: the compiled kernels release the GIL, so threads use every
    core with nothing to start and no text to copy between processes (numba's nogil).
    """
    done = progress or (lambda consumed: None)
    first = next(batches, None)
    if first is None:
        return
    chained = itertools.chain([first], batches)
    if first[0].sketch is not None:  # computed elsewhere (ingest --fingerprint-field): nothing to do
        for documents in chained:
            done(sum(document.consumed for document in documents))
            yield documents, [cast(Sketch, document.sketch) for document in documents]
        return
    if jobs == 1:
        for documents in chained:
            values: list[Sketch | None] = []
            for part in _parts(documents, jobs):
                values += index.sketches([document.content for document in part])
                done(sum(document.consumed for document in part))
            yield documents, values
        return
    with ThreadPoolExecutor(jobs, thread_name_prefix="simdb-sketch") as pool:
        pending: deque[tuple[list[Document], list[_Part]]] = deque()
        try:
            for documents in chained:
                parts = [
                    (part, pool.submit(index.sketches, [document.content for document in part]))
                    for part in _parts(documents, jobs)
                ]
                pending.append((documents, parts))
                if len(pending) == 2:  # the batch before this one is stored while this one is sketched
                    yield _joined(*pending.popleft(), done)
            while pending:
                yield _joined(*pending.popleft(), done)
        except BaseException:  # Ctrl-C, an error, or the consumer stopped: drop the parts queued
            pool.shutdown(cancel_futures=True)
            raise


_Part = tuple[list[Document], Future[list[Sketch | None]]]


def _parts(documents: list[Document], jobs: int) -> list[list[Document]]:
    """A batch in 4 parts per thread, so that the threads finish a batch at about the same time
    (and a progress bar moves four times a batch at least)."""
    size = max(1, -(-len(documents) // (4 * jobs)))
    return [documents[at : at + size] for at in range(0, len(documents), size)]


def _joined(
    documents: list[Document], parts: list[_Part], done: Callable[[int], object]
) -> tuple[list[Document], list[Sketch | None]]:
    """A batch's sketches, waiting for its parts in order and reporting each one's bytes."""
    values: list[Sketch | None] = []
    for part, future in parts:
        values += future.result()
        done(sum(document.consumed for document in part))
    return documents, values


def count_stored(report: Report, size: int, counts: tuple[int, int]) -> None:
    """Add what `store` did with a batch of `size` rows to a report."""
    inserted, updated = counts
    report.inserted += inserted
    report.updated += updated
    report.unchanged += size - inserted - updated


@dataclass(frozen=True)
class Row:
    """One row as it is written to an index: its key and sketch, and what is known of the document
    it sketches (NULL where not): its size in bytes, a hash of its content (a sync skips rows
    whose text has the stored hash), a file's extension and modification time in ns."""

    key: str
    sketch: Sketch
    size: int | None = None
    content_hash: bytes | None = None
    extension: str | None = None
    mtime_ns: int | None = None

    @classmethod
    def of(cls, document: Document, sketch: Sketch) -> Row:
        return cls(
            document.key, sketch, document.size, document.content_hash, document.extension, document.mtime_ns
        )


def store(
    conn: Connection, index: Index, batch: Mapping[str, Sketch], *, new_keys: bool = False
) -> tuple[int, int]:
    """Upsert {key: sketch} in one transaction; returns (inserted, updated). A sketch is an
    unsigned fingerprint (simhash index) or a MinHash signature (jaccard index); store_rows
    takes rows with what is known of their documents too."""
    return store_rows(conn, index, [Row(key, sketch) for key, sketch in batch.items()], new_keys=new_keys)


def store_rows(
    conn: Connection, index: Index, rows: Sequence[Row], *, new_keys: bool = False
) -> tuple[int, int]:
    """Upsert rows in one transaction; returns (inserted, updated).

    The rows are copied (binary COPY) into a staging table, then inserted; an existing key gets
    the new values, and a key whose values are all unchanged is left alone. With `new_keys` (the
    keys are most likely not stored yet: a first load) the rows are first copied straight into
    the table, several times faster; if a key is there after all, that is undone and the batch
    goes the usual way. Every row of the batch is marked seen (`seen_at`), written or not.
    A key PostgreSQL cannot store (keys.key_problem) is refused before anything is sent.
    """
    cursor = conn.cursor()
    plan = upsert_plan(index, cursor, rows)
    if new_keys and index.placement.bulk_writes:
        try:
            with conn.transaction():
                copy_rows(cursor, index.table, plan.columns, plan.types, plan.rows)
            return len(plan.rows), 0
        except psycopg.errors.UniqueViolation:
            pass  # a key stored already: upsert as below
    with conn.transaction():
        conn.execute(plan.create_stage)
        copy_rows(cursor, plan.stage, plan.columns, plan.types, plan.rows)
        inserted, updated = plan.counts(plan.upsert.run(conn).fetchone())
        if inserted + updated < len(plan.rows):  # some rows were left as they were: they are seen too
            _mark_seen(conn, index, plan.keys)
    return inserted, updated


@dataclass(frozen=True)
class UpsertPlan:
    """What `store` sends for one batch (simdb.aio sends the same): the rows to copy, in key
    order, the staging table's statement and the upsert from it."""

    keys: list[str]
    rows: list[tuple[Any, ...]]
    columns: sql.Composable
    types: list[str]
    stage: sql.Composable
    create_stage: sql.Composed
    upsert: Writes  # the upsert from the staging table, and what the placement writes with it

    def counts(self, row: tuple[Any, ...] | None) -> tuple[int, int]:
        """(inserted, updated) from the upsert's row."""
        return (int(row[0]), int(row[1])) if row else (0, 0)


def upsert_plan(index: Index, context: AdaptContext, rows: Sequence[Row]) -> UpsertPlan:
    """The plan of `store`'s upsert of a batch, its rows ready for a binary COPY on `context`
    (the cursor that copies, where a mode registers its dumper); refuses a key PostgreSQL
    cannot store."""
    ordered = sorted(rows, key=lambda row: row.key)  # one lock order for every writer: no deadlock
    keys = [row.key for row in ordered]
    _check_keys(keys)
    to_copy = index.copy_sketches(context)
    stage = names.stage_table(index.mode, index.sketch_size, index.name)
    sketch = sql.Identifier(index.sketch_column)
    columns = sql.SQL(", ").join(
        [
            sql.Identifier("key"),
            sketch,
            *map(sql.Identifier, ("size", "content_hash", "extension", "mtime_ns")),
        ]
    )
    copied = [
        (row.key, to_copy(row.sketch), row.size, row.content_hash, row.extension, row.mtime_ns)
        for row in ordered
    ]
    create_stage = sql.SQL(
        "CREATE TEMP TABLE IF NOT EXISTS {stage}"
        " (key text, {sketch}, size bigint, content_hash bytea, extension text, mtime_ns bigint)"
        " ON COMMIT DELETE ROWS"
    ).format(stage=stage, sketch=index.sketch_definition())
    upsert = sql.SQL(
        "WITH up AS ("
        " INSERT INTO {table} AS t ({columns}, added_at)"
        " SELECT {columns}, now() FROM {stage} ORDER BY key"
        " ON CONFLICT (key) DO UPDATE"
        " SET {sketch} = excluded.{sketch}, size = excluded.size,"
        " content_hash = excluded.content_hash, extension = excluded.extension,"
        " mtime_ns = excluded.mtime_ns, added_at = excluded.added_at, seen_at = excluded.seen_at"
        " WHERE (t.{sketch}, t.size, t.content_hash, t.extension, t.mtime_ns)"
        " IS DISTINCT FROM (excluded.{sketch}, excluded.size, excluded.content_hash,"
        " excluded.extension, excluded.mtime_ns)"
        " RETURNING (xmax = 0) AS inserted)"
        " SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted) FROM up"
    ).format(table=index.table, columns=columns, stage=stage, sketch=sketch)
    types = ["text", index.sketch_type, "int8", "bytea", "text", "int8"]
    return UpsertPlan(
        keys, copied, columns, types, stage, create_stage, index.placement.upsert_writes(index, stage, upsert)
    )


def _check_keys(keys: Iterable[str]) -> None:
    """InvalidParameter naming the first key PostgreSQL could not store, before a batch is sent."""
    for key in keys:
        problem = key_problem(key)
        if problem is not None:
            raise InvalidParameter(f"the key '{shown(key)}' {problem}", "give keys PostgreSQL can store")


def touch(conn: Connection, index: Index, keys: list[str]) -> None:
    """Mark these keys' rows seen now, in a transaction: files an ingest found unchanged, unread."""
    with conn.transaction():
        _mark_seen(conn, index, sorted(keys))


def _mark_seen(conn: Connection, index: Index, keys: list[str]) -> None:
    """seen_at = now() on these keys' rows (sorted keys: the lock order of every writer)."""
    conn.execute(mark_seen_statement(index), (keys,))


def mark_seen_statement(index: Index) -> sql.Composed:
    """_mark_seen's statement, of one parameter: the sorted keys."""
    return sql.SQL("UPDATE {} SET seen_at = now() WHERE key = ANY(%s) AND seen_at < now()").format(
        index.table
    )


def remove_unseen(conn: Connection, index: Index, scope: Scope, since: datetime) -> int:
    """Remove the rows of `scope` not seen since `since` (files gone from the folders an ingest
    read, or no longer ingested: now empty, binary, or another name of a file); returns how many."""
    condition = sql.SQL("seen_at < %s AND (key = ANY(%s) OR key LIKE ANY(%s))")
    with conn.transaction():
        cursor = index.placement.delete_writes(index, condition).run(
            conn, (since, scope.keys, scope.patterns())
        )
    texts.forget_removed(conn, index)
    return cursor.rowcount


def copy_rows(
    cursor: psycopg.Cursor[Any],
    table: sql.Composable,
    columns: sql.Composable,
    types: list[str],
    rows: list[tuple[Any, ...]],
) -> None:
    """Binary COPY of `rows` into `table`'s `columns`, of PostgreSQL `types`."""
    with cursor.copy(copy_statement(table, columns)) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def copy_statement(table: sql.Composable, columns: sql.Composable) -> sql.Composed:
    """The binary COPY of copy_rows (simdb.aio copies with it too)."""
    return sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(table, columns)


FileTimes = dict[str, tuple[int | None, int | None]]  # key: (size, mtime_ns)


def file_times(conn: Connection, index: Index) -> Callable[[list[str]], FileTimes]:
    """A lookup of the (size, mtime_ns) stored for file keys, for readers.Options.known: ingest
    then passes over files whose size and modification time are unchanged, unread."""
    statement = sql.SQL(
        "SELECT key, size, mtime_ns FROM {} WHERE key = ANY(%s) AND mtime_ns IS NOT NULL"
    ).format(index.table)

    def known(keys: list[str]) -> FileTimes:
        return {key: (size, mtime) for key, size, mtime in conn.execute(statement, (keys,))}

    return known


def vacuum(conn: Connection, index: Index) -> None:
    """VACUUM ANALYZE after loading: statistics of the B-trees' expressions (the planner picks the
    probes by them) and the visibility map.

    VACUUM cannot run inside a transaction; on a connection that is not in autocommit mode we
    leave it to autovacuum rather than commit the caller's transaction.
    """
    if conn.autocommit:
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(index.storage.heap(index)))


def delete(conn: Connection, index: Index, keys: Iterable[str]) -> int:
    """Remove the rows of these keys in one transaction; returns how many existed. Refused where
    simdb does not write the index's rows itself (storage.refuse_writes)."""
    index.storage.refuse_writes(index, "delete")
    return remove(conn, index, keys)


def remove(conn: Connection, index: Index, keys: Iterable[str]) -> int:
    """`delete` without asking the storage: how simdb's own writers (a sync of a side table, a
    batch dropping rows that lost their text) remove rows."""
    writes, wanted = _key_deletes(index, keys)
    with conn.transaction():
        cursor = writes.run(conn, (wanted,))
        if texts.keeps(conn, index):
            texts.forget(conn, index, wanted)
    return cursor.rowcount


def delete_writes(index: Index, keys: Iterable[str]) -> tuple[Writes, list[str]]:
    """`delete`'s statements and the write's one parameter, the sorted keys; refused where simdb
    does not write the index's rows."""
    index.storage.refuse_writes(index, "delete")
    return _key_deletes(index, keys)


def _key_deletes(index: Index, keys: Iterable[str]) -> tuple[Writes, list[str]]:
    return index.placement.delete_writes(index, sql.SQL("key = ANY(%s)")), sorted(set(keys))


def prune(
    conn: Connection,
    index: Index,
    older_than: timedelta,
    *,
    agree: Callable[[int, int], bool] = lambda removed, rows: True,
) -> int:
    """Remove the rows last seen (written, or found unchanged by an ingest) more than `older_than`
    ago; returns how many. `agree(removed, rows)` sees what the deletion would do before it
    commits; if it says no, nothing is removed."""
    index.storage.refuse_writes(index, "prune")
    with conn.transaction() as transaction:
        cursor = index.placement.delete_writes(index, sql.SQL("seen_at < now() - %s")).run(
            conn, (older_than,)
        )
        removed = cursor.rowcount
        left = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(index.table)).fetchone()
        if removed and not agree(removed, removed + (left[0] if left else 0)):
            removed = 0
            raise psycopg.Rollback(transaction)
    if removed:
        texts.forget_removed(conn, index)
    return removed


_DURATION = re.compile(r"(\d+)\s*(s|m|h|d|w)")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """'90s', '15m', '12h', '30d', '2w' (or several, as in '1d12h') -> timedelta, at most 1000000d:
    now() minus more would leave PostgreSQL's dates (4713 BC) or Python's timedelta."""
    longest_days = 1_000_000
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(number + unit for number, unit in parts) != compact:
        raise InvalidParameter(
            f"bad duration {text!r}", "write a number and a unit (s, m, h, d, w), e.g. 30d or 1d12h"
        )
    try:  # (timedelta overflows past 999999999 days, and int() refuses more than 4300 digits)
        age = sum((timedelta(**{_UNITS[unit]: int(number)}) for number, unit in parts), timedelta())
    except (OverflowError, ValueError):
        age = None
    if age is None or age > timedelta(days=longest_days):
        raise InvalidParameter(
            f"duration {text!r} is too long", f"the longest allowed is {longest_days}d, about 2,700 years"
        )
    return age


def format_duration(age: timedelta) -> str:
    """A duration as parse_duration reads it, largest unit first: 2d, 1d12h, 30m, 0s."""
    seconds = int(age.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # binary COPY's signature, flags, extension length
COPY_TRAILER = b"\xff\xff"  # (for rows written whole with Copy.write, which adds neither)
BUILD_MEMORY = "1GB"  # maintenance_work_mem of a bulk load's B-tree builds, at least


@dataclass(frozen=True)
class BulkLoad:
    """What bulk_load did and how long each step took."""

    rows: int
    copy_seconds: float
    index_seconds: float


def bulk_load(conn: Connection, index: Index, rows: Iterable[tuple[str, Sketch]]) -> BulkLoad:
    """Fill an empty index fast, in one transaction: COPY without the B-trees and the primary
    key, then build them.

    Building a B-tree once from sorted input is far cheaper than inserting millions of random
    keys into it. Keys must be unique (a repeated one is refused and nothing is stored); for
    updates and re-runs use `store` / `ingest` (and for fingerprints in a file, simdb.load).
    On an autocommit connection the table is then vacuumed and analysed (`vacuum`); in a
    transaction of the caller's that is left to autovacuum, and until it comes each candidate a
    query finds costs a visit to the table's heap.
    """
    if not is_empty(conn, index):
        raise InvalidParameter(
            f"index {index.name!r} is not empty", "bulk_load fills new indexes; use ingest"
        )
    with conn.transaction():
        drop_constraints(conn, index)
        started = time.perf_counter()
        count = 0
        cursor = conn.cursor()
        to_copy = index.copy_sketches(cursor)
        with cursor.copy(
            sql.SQL("COPY {} (key, {}) FROM STDIN (FORMAT BINARY)").format(
                index.table, sql.Identifier(index.sketch_column)
            )
        ) as copy:
            copy.set_types(["text", index.sketch_type])
            for key, value in rows:
                copy.write_row((key, to_copy(value)))
                count += 1
        copied = time.perf_counter()
        build_constraints(
            conn, index, "give each key once, or load with ingest/store, which update repeated keys"
        )
        built = time.perf_counter()
    vacuum(conn, index)
    return BulkLoad(count, copied - started, built - copied)


def _sort_memory(conn: Connection) -> None:
    """Let the B-tree builds of the caller's transaction sort in BUILD_MEMORY where the server's
    setting is less (its 64 MB default sorts 100M rows in temporary files, several passes)."""
    conn.execute(
        "SELECT set_config('maintenance_work_mem', %s, true)"
        " WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes(%s)",
        (BUILD_MEMORY, BUILD_MEMORY),
    )


def drop_constraints(conn: Connection, index: Index) -> None:
    """Drop the index's B-trees and primary key, before rows are copied into its empty table."""
    _drop_btrees(conn, index)
    conn.execute(
        sql.SQL("ALTER TABLE {} DROP CONSTRAINT IF EXISTS {}").format(
            index.table, sql.Identifier(names.primary_key_name(index.name))
        )
    )


def build_constraints(conn: Connection, index: Index, repeated_hint: str) -> None:
    """Build what drop_constraints dropped from all the rows copied (in the caller's transaction),
    and what the placement derives from them. A key given twice is refused, with `repeated_hint`.
    Each build sorts in BUILD_MEMORY at least (_sort_memory)."""
    _sort_memory(conn)
    try:
        with conn.transaction():
            conn.execute(
                sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY (key)").format(
                    index.table, sql.Identifier(names.primary_key_name(index.name))
                )
            )
    except psycopg.errors.UniqueViolation as error:
        raise InvalidParameter(
            f"a key is given twice: {error.diag.message_detail or ''}", repeated_hint
        ) from error
    for statement in index.btrees(if_missing=True):
        conn.execute(statement)
    index.placement.derive(conn, index)
