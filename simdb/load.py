"""Fill a new index with fingerprints computed elsewhere at the speed of COPY: binary COPY of
chunks into the bare table (no primary key, no B-tree), then each built once from all the rows.

Each chunk is copied in a transaction of its own, which also counts it in simdb._loads: a load
interrupted anywhere (Ctrl-C, a crash, a full disk) resumes after the last chunk that committed,
on the same file (sources.fingerprints tells it is the same). Until a load ends the index
answers exactly, without its B-trees: each query scans the rows copied so far.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt
from psycopg import sql

from simdb import ingest
from simdb.db.connection import Connection
from simdb.errors import InputError, InvalidParameter
from simdb.index import catalog
from simdb.index.modes import Index
from simdb.sources.fingerprints import Chunk, FingerprintFile

T = TypeVar("T")
CHUNK_ROWS = 100_000  # rows a transaction copies: about 3 MB of COPY data


@dataclass(frozen=True)
class LoadReport:
    """What `load` did, and how long each step took."""

    index: str
    source: str
    rows: int  # rows in the index when the load ended
    resumed_at: int  # rows an earlier, interrupted run had copied (0: a run from the start)
    copy_seconds: float  # reading the file and copying its rows
    build_seconds: float  # the primary key, the B-trees, VACUUM (ANALYZE)

    @property
    def rows_per_second(self) -> float:
        copied = self.rows - self.resumed_at
        return copied / (self.copy_seconds + self.build_seconds) if copied else 0.0

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "rows_per_second": self.rows_per_second}

    def lines(self) -> list[str]:
        resumed = f" (resumed after {self.resumed_at:,})" if self.resumed_at else ""
        return [
            f"loaded {self.rows:,} rows into {self.index}{resumed} from {self.source}",
            f"copy {self.copy_seconds:.1f} s, primary key, B-trees and analyse {self.build_seconds:.1f} s:"
            f" {self.rows_per_second:,.0f} rows/s",
        ]


def load(
    conn: Connection,
    index: Index,
    source: FingerprintFile,
    *,
    restart: bool = False,
    chunk_rows: int = CHUNK_ROWS,
    progress: Callable[[int], object] = lambda _: None,
) -> LoadReport:
    """Copy every fingerprint of `source` into the new (empty) 64-bit simhash index, then build
    its primary key and B-trees; or go on with a load of the same file that was interrupted.
    `restart` empties the index of an interrupted load first. `progress` gets the rows or bytes
    (as source.total counts) of each chunk copied. Needs an autocommit connection of the
    table's owner."""
    _check_loadable(conn, index)
    with conn.transaction():
        mark = catalog.load_mark(conn, index.name)
        start = _begin(conn, index, source, mark, restart)
    began, at = time.perf_counter(), start
    reached = start if source.rows is not None else 0  # (a position in rows, or in bytes)
    progress(reached)
    for chunk, data in _read_ahead(_encoded(source.chunks(start, chunk_rows))):
        _copy_chunk(conn, index, len(chunk), data)
        at += len(chunk)
        progress(chunk.consumed - reached)
        reached = chunk.consumed
    copied = time.perf_counter()
    _build(conn, index)
    ingest.vacuum(conn, index)
    built = time.perf_counter()
    return LoadReport(index.name, source.source, at, start, copied - began, built - copied)


def _encoded(chunks: Iterator[Chunk]) -> Iterator[tuple[Chunk, npt.NDArray[np.uint8]]]:
    """Each chunk with its rows in binary COPY's format (a kernel's)."""
    from simdb.kernels import compiled

    for chunk in chunks:
        yield chunk, compiled.copy_tuples(chunk.keys, chunk.ends, chunk.values)


def _read_ahead(items: Iterator[T]) -> Iterator[T]:
    """The items, each made (a chunk read, parsed and encoded) in a thread while the one before
    is copied: the client's work and the server's COPY overlap. The thread's error is raised here."""
    ready: queue.Queue[T | BaseException | None] = queue.Queue(maxsize=2)
    stopped = threading.Event()  # the caller is gone (an error, Ctrl-C): the thread ends too

    def hand(item: T | BaseException | None) -> None:
        while not stopped.is_set():
            try:
                ready.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def read() -> None:
        try:
            for item in items:
                if stopped.is_set():
                    return
                hand(item)
            hand(None)
        except BaseException as error:  # (handed to the caller, who raises it)
            hand(error)

    threading.Thread(target=read, name="simdb-load-read", daemon=True).start()
    try:
        while (item := ready.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stopped.set()


def load_kernels() -> None:
    """Load (or compile) the kernels that key and encode rows (simdb.warmup)."""
    from simdb.kernels import compiled

    keys, ends = compiled.numbered_keys(np.zeros(1, dtype=np.uint8), 0, 1)
    compiled.copy_tuples(keys, ends, np.zeros(1, dtype=np.uint64))


def _check_loadable(conn: Connection, index: Index) -> None:
    if not conn.autocommit:
        raise InvalidParameter(
            "simdb load commits each chunk it copies", "call it on an autocommit connection"
        )
    if index.sketch_type != "bigint" or not index.placement.bulk_writes:
        raise InvalidParameter(
            f"index {index.name!r} does not keep 64-bit fingerprints in simdb's own table",
            "simdb load fills such an index (simhash, 64 bits); fill this one with simdb ingest",
        )


def _begin(
    conn: Connection, index: Index, source: FingerprintFile, mark: catalog.LoadMark | None, restart: bool
) -> int:
    """The row to start from: 0 for a new load (the index's B-trees and primary key dropped, the
    load recorded), or the rows an interrupted load of this same file copied."""
    if mark is not None and not restart:
        if mark.identity != source.identity:
            raise InputError(
                f"index {index.name!r} holds {mark.rows:,} rows of an interrupted load of {mark.source},"
                f" and {source.source} is not that file (or it changed since)",
                "give the same, unchanged file to resume, or --restart to empty the index and load this one",
            )
        return mark.rows
    if mark is not None:
        conn.execute(sql.SQL("TRUNCATE {}").format(index.table))
    elif not ingest.is_empty(conn, index):
        raise InvalidParameter(
            f"index {index.name!r} already holds rows",
            "simdb load fills a new index: create one, or add to this one with"
            " simdb ingest --fingerprint-field",
        )
    else:
        ingest.drop_constraints(conn, index)
    catalog.begin_load(conn, index.name, source.source, source.identity)
    return 0


def _copy_chunk(conn: Connection, index: Index, rows: int, data: npt.NDArray[np.uint8]) -> None:
    """One chunk's rows, encoded for binary COPY, counted in the load's mark in the same transaction."""
    statement = sql.SQL("COPY {} (key, {}) FROM STDIN (FORMAT BINARY)").format(
        index.table, sql.Identifier(index.sketch_column)
    )
    with conn.transaction():
        with conn.cursor().copy(statement) as copy:
            copy.write(ingest.COPY_HEADER)
            copy.write(data.data)
            copy.write(ingest.COPY_TRAILER)
        catalog.advance_load(conn, index.name, rows)


def _build(conn: Connection, index: Index) -> None:
    """The primary key and the B-trees, from all the rows; the load's mark goes with them."""
    with conn.transaction():
        ingest.build_constraints(
            conn,
            index,
            "give each key once: fix the file, then load again with --restart",
        )
        catalog.end_load(conn, index.name)
