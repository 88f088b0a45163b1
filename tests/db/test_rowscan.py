"""simdb.index.rowscan.read: every row's address and values, whether one statement reads the table or
many ranges of pages do, on a real table."""

from __future__ import annotations

import numpy as np
import psycopg
from psycopg import sql

from simdb.index import rowscan

TABLE = sql.Identifier("rowscan_sample")
EXPRESSIONS = [sql.SQL("r.v"), sql.SQL("r.v # r.id")]


def _expected(conn: psycopg.Connection[tuple[object, ...]]) -> set[tuple[str, int, int]]:
    rows = conn.execute(sql.SQL("SELECT ctid::text, v, v # id FROM {}").format(TABLE)).fetchall()
    return {(str(address), int(str(v)), int(str(w))) for address, v, w in rows}


def _read(conn: psycopg.Connection[tuple[object, ...]], chunk_bytes: int) -> list[tuple[str, int, int]]:
    found = rowscan.read(conn, TABLE, EXPRESSIONS, chunk_bytes=chunk_bytes)
    positions = range(len(found.references))
    return list(zip(found.at(positions), *(values.tolist() for values in found.values), strict=True))


def test_read_returns_every_row_once_in_one_statement_or_in_ranges_of_pages(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, v bigint)").format(TABLE))
    assert _read(conn, rowscan._CHUNK_BYTES) == []  # an empty table: no row, no error
    conn.execute(
        sql.SQL(
            "INSERT INTO {} SELECT i, (i * 2654435761) # (i << 40) FROM generate_series(1, 5000) i"
        ).format(TABLE)
    )
    conn.execute(sql.SQL("DELETE FROM {} WHERE id % 7 = 0").format(TABLE))  # holes in the pages
    pages = conn.execute("SELECT pg_relation_size('rowscan_sample') / 8192").fetchone()
    assert pages is not None and pages[0] > 10
    expected = _expected(conn)
    for chunk_bytes in (rowscan._CHUNK_BYTES, 1, 30_000):  # one statement; a page each; a few pages
        found = _read(conn, chunk_bytes)
        assert len(found) == len(expected) == 5000 - 5000 // 7 and set(found) == expected


def test_read_column_keeps_each_rows_address_in_ten_bytes(
    conn: psycopg.Connection[tuple[object, ...]],
) -> None:
    """The same rows and addresses as read, whatever the ranges, and with a row estimate that is
    short (rows added after ANALYZE: the arrays grow)."""
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, v bigint)").format(TABLE))
    assert len(rowscan.read_column(conn, TABLE, EXPRESSIONS[0]).values) == 0
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, i * 7919 FROM generate_series(1, 3000) i").format(TABLE))
    conn.execute(sql.SQL("DELETE FROM {} WHERE id % 5 = 0").format(TABLE))
    conn.execute(sql.SQL("ANALYZE {}").format(TABLE))
    conn.execute(
        sql.SQL("INSERT INTO {} SELECT i, i * 7919 FROM generate_series(3001, 9000) i").format(TABLE)
    )
    expected = {(address, v) for address, v, _ in _expected(conn)}
    for chunk_bytes in (rowscan._CHUNK_BYTES, 1, 30_000):
        column = rowscan.read_column(conn, TABLE, EXPRESSIONS[0], chunk_bytes=chunk_bytes)
        found = list(zip(column.at(np.arange(len(column.values))), column.values.tolist(), strict=True))
        assert len(found) == len(expected) == 9000 - 600 and set(found) == expected
        assert column.offsets.dtype == np.uint16 and len(column.pages) < len(found) / 50
