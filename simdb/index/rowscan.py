"""Every row of an index as numpy arrays: a reference to find it again (its address, or its key)
and bigint expressions of it, for pairing in memory (simdb.plan.pairing).

Addresses stay valid only within the snapshot that read them: read them, and the rows they point
to, in one REPEATABLE READ transaction.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from simdb.db.connection import Connection
from simdb.errors import SimdbError

ADDRESS = np.dtype([("block", ">u4"), ("offset", ">u2")])  # tidsend's six bytes
_CHUNK_BYTES = 1 << 28  # the most one statement returns per column: 256 MB, well under 1 GB
_PAGE_HEADER, _ROW_OVERHEAD = 24, 28  # a heap page's header; a tuple's aligned header and line pointer
_BEYOND = f"({2**32 - 1},{2**16 - 1})"  # the largest tid: past every row's address
Where = tuple[sql.Composable, Sequence[object]]  # a condition on the rows (alias r) and its parameters


@dataclass(frozen=True)
class Rows:
    """Row i is found again by references[i]; its value of expression e is values[e][i] (int64)."""

    references: np.ndarray  # ADDRESS records, or keys (objects)
    values: list[np.ndarray]

    def at(self, positions: np.ndarray) -> list[str]:
        """The references of these rows as text, for a tid[] or text[] parameter."""
        found = self.references[positions]
        if found.dtype == ADDRESS:
            return [f"({block},{offset})" for block, offset in found.tolist()]
        return list(found)


@dataclass(frozen=True)
class Column:
    """Each row's value of one bigint expression, and its address kept compactly: rows come in
    address order, so the page of a run of rows on one page is kept once (with the position of
    its first row), and each row's offset in it in two bytes: 10 bytes a row in all."""

    values: np.ndarray  # int64
    pages: np.ndarray  # uint32: the page of each run of rows
    starts: np.ndarray  # int64: the position of each run's first row
    offsets: np.ndarray  # uint16: each row's place in its page

    def positions(self, addresses: np.ndarray) -> np.ndarray:
        """The positions of the rows at these addresses (ADDRESS records), which the column
        holds: read in the same snapshot."""
        from simdb.kernels import compiled as kernels  # (numba loads with the first pairs)

        blocks, places = addresses["block"].astype(np.uint32), addresses["offset"].astype(np.uint16)
        found = kernels.positions_of(self.pages, self.starts, self.offsets, blocks, places)
        if (found < 0).any():
            raise SimdbError(
                f"{int((found < 0).sum())} rows were not among the rows read: read both in one "
                "REPEATABLE READ transaction"
            )
        return found

    def at(self, positions: np.ndarray) -> list[str]:
        """The addresses of these rows as text, for a tid[] parameter."""
        pages = self.pages[np.searchsorted(self.starts, positions, side="right") - 1]
        return [
            f"({page},{offset})"
            for page, offset in zip(pages.tolist(), self.offsets[positions].tolist(), strict=True)
        ]


def read_column(
    conn: Connection,
    table: sql.Composable,
    expression: sql.Composable,
    chunk_bytes: int = _CHUNK_BYTES // 4,
    jobs: int = 1,
) -> Column:
    """Every row's value of one bigint expression (over alias r) and its address, as `read` reads
    them, into arrays sized once from the table's row estimate (grown if it was short): at 100M
    rows 1 GB, where `read` holds twice its 1.4 GB while it joins the parts. With `jobs` > 1 in a
    REPEATABLE READ transaction, that many connections read in its snapshot (see _sharing)."""
    estimate = conn.execute(
        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass",
        (table.as_string(conn),),
    ).fetchone()
    size = max(1024, int(1.05 * (estimate[0] if estimate else 0)))
    values, offsets = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint16)
    pages: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    at = 0
    for addresses, data in _ranges(conn, table, [expression], chunk_bytes, jobs):
        rows = len(addresses)
        if at + rows > len(values):
            size = max(2 * len(values), at + rows)
            values, offsets = np.resize(values, size), np.resize(offsets, size)
        values[at : at + rows] = np.frombuffer(data[0], dtype=">i8")
        offsets[at : at + rows] = addresses["offset"]
        blocks = addresses["block"]
        runs = np.flatnonzero(np.concatenate(([True], blocks[1:] != blocks[:-1])))
        pages.append(blocks[runs].astype(np.uint32))
        starts.append(runs + at)
        at += rows
    empty = np.empty(0, dtype=np.int64)
    return Column(
        values[:at],
        np.concatenate([empty.astype(np.uint32), *pages]),
        np.concatenate([empty, *starts]),
        offsets[:at],
    )


def addresses(conn: Connection, table: sql.Composable, where: Where) -> np.ndarray:
    """The addresses (ADDRESS records, in address order) of the rows where a condition holds."""
    condition, parameters = where
    statement = sql.SQL("SELECT string_agg(tidsend(r.ctid), ''::bytea ORDER BY r.ctid) FROM {} AS r WHERE {}")
    row = conn.execute(statement.format(table, condition), parameters, binary=True).fetchone()
    return np.frombuffer(row[0] if row and row[0] is not None else b"", dtype=ADDRESS)


def read(
    conn: Connection,
    table: sql.Composable,
    expressions: list[sql.Composable],
    chunk_bytes: int = _CHUNK_BYTES,
) -> Rows:
    """Each row's address and its value of each bigint expression (over alias r), as binary
    strings (string_agg of each value's binary form), one statement per range of pages that
    returns at most `chunk_bytes` a column: a value or a row PostgreSQL sends is at most 1 GB,
    which one statement over 10M rows passed."""
    parts: list[list[bytes]] = [[] for _ in range(1 + len(expressions))]
    for addresses, data in _ranges(conn, table, expressions, chunk_bytes):
        parts[0].append(addresses.tobytes())
        for part, value in zip(parts[1:], data, strict=True):
            part.append(value)
    return Rows(
        np.frombuffer(b"".join(parts[0]), dtype=ADDRESS),
        [np.frombuffer(b"".join(part), dtype=">i8").astype(np.int64) for part in parts[1:]],
    )


def _ranges(
    conn: Connection,
    table: sql.Composable,
    expressions: list[sql.Composable],
    chunk_bytes: int,
    jobs: int = 1,
) -> Iterator[tuple[np.ndarray, list[bytes]]]:
    """The rows of each range of pages, in order, as their addresses (ADDRESS records) and each
    expression's values (int8send bytes, big-endian); a range returns at most `chunk_bytes` a
    column. Ranges are read on the connections _sharing gives, a statement at a time on each."""
    pages, page_size = conn.execute(
        "SELECT pg_relation_size(%s::regclass) / current_setting('block_size')::int,"
        " current_setting('block_size')::int",
        (table.as_string(conn),),
    ).fetchone() or (0, 8192)
    most_rows = (page_size - _PAGE_HEADER) // _ROW_OVERHEAD  # PostgreSQL's MaxHeapTuplesPerPage
    step = max(1, chunk_bytes // (most_rows * (ADDRESS.itemsize + 8 * len(expressions))))
    aggregates = [sql.SQL("string_agg(tidsend(r.ctid), ''::bytea)")] + [
        sql.SQL("string_agg(int8send({}), ''::bytea)").format(expression) for expression in expressions
    ]
    statement = sql.SQL("SELECT {} FROM {} AS r WHERE r.ctid >= %s::tid AND r.ctid < %s::tid").format(
        sql.SQL(", ").join(aggregates), table
    )

    def fetch(connection: Connection, bounds: tuple[str, str]) -> tuple[np.ndarray, list[bytes]] | None:
        row = connection.execute(statement, bounds, binary=True).fetchone()
        if row is None or row[0] is None:
            return None
        return np.frombuffer(row[0], dtype=ADDRESS), list(row[1:])

    with _sharing(conn, jobs if pages > 1 else 1) as connections:
        if len(connections) > 1:  # (ranges enough for each connection to take several)
            step = max(1, min(step, -(-pages // (4 * len(connections)))))
        # The last range is open-ended, so no row past the size read above is left out.
        bounds = [
            (f"({first},0)", f"({first + step},0)" if first + step < pages else _BEYOND)
            for first in range(0, max(pages, 1), step)
        ]
        with ThreadPoolExecutor(len(connections), thread_name_prefix="simdb-read") as pool:
            pending: deque[Future[tuple[np.ndarray, list[bytes]] | None]] = deque()
            for number, bound in enumerate(bounds):  # (a statement at a time on each connection)
                pending.append(pool.submit(fetch, connections[number % len(connections)], bound))
                while len(pending) >= len(connections) or (pending and number == len(bounds) - 1):
                    done = pending.popleft().result()
                    if done is not None:
                        yield done


@contextmanager
def _sharing(conn: Connection, jobs: int) -> Iterator[list[Connection]]:
    """`conn` and up to jobs - 1 more connections to the same server whose transactions read
    its snapshot (pg_export_snapshot), where conn is in a REPEATABLE READ transaction; just conn
    where it is not, or where another connection cannot be had (too many clients: one reads)."""
    connections = [conn]
    if jobs > 1 and _repeatable_read(conn):
        (snapshot,) = conn.execute("SELECT pg_export_snapshot()").fetchone() or ("",)
        try:
            for _ in range(jobs - 1):
                connections.append(_reading_in(conn, snapshot))
        except psycopg.Error:
            pass
    try:
        yield connections
    finally:
        for other in connections[1:]:
            other.close()


def _repeatable_read(conn: Connection) -> bool:
    if conn.info.transaction_status != TransactionStatus.INTRANS:
        return False
    level = conn.execute("SELECT current_setting('transaction_isolation')").fetchone()
    return level is not None and level[0] in ("repeatable read", "serializable")


def _reading_in(conn: Connection, snapshot: str) -> Connection:
    """A new connection with conn's parameters, in a transaction that reads `snapshot`."""
    other = psycopg.connect(conn.info.dsn, password=conn.info.password or None, connect_timeout=10)
    try:
        other.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        other.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
    except psycopg.Error:
        other.close()
        raise
    return other
