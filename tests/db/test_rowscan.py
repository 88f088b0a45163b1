"""simdb.index.rowscan.read: every row's address and values, whether one statement reads the table or
many ranges of pages do, on a real table."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest
from psycopg import sql

from simdb.errors import SimdbError
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


def test_read_column_on_several_connections_reads_the_callers_snapshot(
    conn: psycopg.Connection[tuple[object, ...]], dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jobs > 1 in a REPEATABLE READ transaction: more connections read ranges of pages in its
    snapshot, so the rows and addresses are one connection's, and rows another transaction writes
    after the snapshot are read by none; outside such a transaction, one connection reads."""
    opened: list[object] = []
    reading_in = rowscan._reading_in
    monkeypatch.setattr(rowscan, "_reading_in", lambda *a: opened.append(a) or reading_in(*a))
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, v bigint)").format(TABLE))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, i * 7919 FROM generate_series(1, 9000) i").format(TABLE))
    conn.execute(sql.SQL("DELETE FROM {} WHERE id % 5 = 0").format(TABLE))
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        expected = {(address, v) for address, v, _ in _expected(conn)}
        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute(sql.SQL("UPDATE {} SET v = -v WHERE id < 3000").format(TABLE))
            other.execute(
                sql.SQL("INSERT INTO {} SELECT i, i FROM generate_series(9001, 9500) i").format(TABLE)
            )
        for chunk_bytes in (1, 30_000, rowscan._CHUNK_BYTES):  # a page a range; a few; one range
            column = rowscan.read_column(conn, TABLE, EXPRESSIONS[0], chunk_bytes=chunk_bytes, jobs=3)
            found = list(zip(column.at(np.arange(len(column.values))), column.values.tolist(), strict=True))
            assert len(found) == len(expected) == 9000 - 1800 and set(found) == expected
        assert len(opened) == 2 * 3  # two more connections for each read
    column = rowscan.read_column(conn, TABLE, EXPRESSIONS[0], chunk_bytes=1, jobs=3)  # autocommit
    assert len(column.values) == 9000 - 1800 + 500 and len(opened) == 6


def test_positions_find_rows_by_address(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Column.positions: where the rows at these addresses are in the column (read in the same
    snapshot: an address it does not hold is an error, never a wrong row)."""
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, v bigint)").format(TABLE))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, i FROM generate_series(1, 3000) i").format(TABLE))
    conn.execute(sql.SQL("DELETE FROM {} WHERE id % 3 = 0").format(TABLE))
    column = rowscan.read_column(conn, TABLE, EXPRESSIONS[0], chunk_bytes=30_000)
    chosen = rowscan.addresses(conn, TABLE, (sql.SQL("r.id %% %s = 1"), [7]))
    positions = column.positions(chosen)
    assert sorted(column.values[positions].tolist()) == [i for i in range(1, 3001) if i % 7 == 1 and i % 3]
    assert column.at(positions) == [f"({block},{offset})" for block, offset in chosen.tolist()]
    conn.execute(sql.SQL("INSERT INTO {} VALUES (9999, 9999)").format(TABLE))
    with pytest.raises(SimdbError, match="not among the rows read"):
        column.positions(rowscan.addresses(conn, TABLE, (sql.SQL("r.id = %s"), [9999])))
