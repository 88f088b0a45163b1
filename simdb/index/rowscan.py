"""Every row of an index as numpy arrays: a reference to find it again (its address, or its key)
and bigint expressions of it, for pairing in memory (simdb.plan.pairing).

Addresses stay valid only within the snapshot that read them: read them, and the rows they point
to, in one REPEATABLE READ transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from psycopg import sql

from simdb.db.connection import Connection

ADDRESS = np.dtype([("block", ">u4"), ("offset", ">u2")])  # tidsend's six bytes
_CHUNK_BYTES = 1 << 28  # the most one statement returns per column: 256 MB, well under 1 GB
_PAGE_HEADER, _ROW_OVERHEAD = 24, 28  # a heap page's header; a tuple's aligned header and line pointer
_BEYOND = f"({2**32 - 1},{2**16 - 1})"  # the largest tid: past every row's address


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

    def at(self, positions: np.ndarray) -> list[str]:
        """The addresses of these rows as text, for a tid[] parameter."""
        pages = self.pages[np.searchsorted(self.starts, positions, side="right") - 1]
        return [
            f"({page},{offset})"
            for page, offset in zip(pages.tolist(), self.offsets[positions].tolist(), strict=True)
        ]


def read_column(
    conn: Connection, table: sql.Composable, expression: sql.Composable, chunk_bytes: int = _CHUNK_BYTES // 4
) -> Column:
    """Every row's value of one bigint expression (over alias r) and its address, as `read` reads
    them, into arrays sized once from the table's row estimate (grown if it was short): at 100M
    rows 1 GB, where `read` holds twice its 1.4 GB while it joins the parts."""
    estimate = conn.execute(
        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass",
        (table.as_string(conn),),
    ).fetchone()
    size = max(1024, int(1.05 * (estimate[0] if estimate else 0)))
    values, offsets = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.uint16)
    pages: list[np.ndarray] = []
    starts: list[np.ndarray] = []
    at = 0
    for addresses, data in _ranges(conn, table, [expression], chunk_bytes):
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
    conn: Connection, table: sql.Composable, expressions: list[sql.Composable], chunk_bytes: int
) -> Iterator[tuple[np.ndarray, list[bytes]]]:
    """The rows of each range of pages, as their addresses (ADDRESS records) and each
    expression's values (int8send bytes, big-endian); a range returns at most `chunk_bytes` a
    column."""
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
    # The last range is open-ended, so no row past the size read above is left out.
    for first in range(0, max(pages, 1), step):
        last = f"({first + step},0)" if first + step < pages else _BEYOND
        row = conn.execute(statement, (f"({first},0)", last), binary=True).fetchone()
        if row is not None and row[0] is not None:
            yield np.frombuffer(row[0], dtype=ADDRESS), list(row[1:])
