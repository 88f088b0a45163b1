"""Every row of an index as numpy arrays: a reference to find it again (its address, or its key)
and bigint expressions of it, for pairing in memory (simdb.plan.pairing).

Addresses stay valid only within the snapshot that read them: read them, and the rows they point
to, in one REPEATABLE READ transaction.
"""

from __future__ import annotations

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
    parts: list[list[bytes]] = [[] for _ in range(1 + len(expressions))]
    # The last range is open-ended, so no row past the size read above is left out.
    for first in range(0, max(pages, 1), step):
        last = f"({first + step},0)" if first + step < pages else _BEYOND
        row = conn.execute(statement, (f"({first},0)", last), binary=True).fetchone()
        if row is not None and row[0] is not None:
            for part, data in zip(parts, row, strict=True):
                part.append(data)
    return Rows(
        np.frombuffer(b"".join(parts[0]), dtype=ADDRESS),
        [np.frombuffer(b"".join(part), dtype=">i8").astype(np.int64) for part in parts[1:]],
    )
