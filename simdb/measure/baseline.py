"""The hand-written tables that `simdb bench` measures simdb's indexes against, in the same run.

What a competent engineer writes without simdb. For SimHash: `id int, fp bigint` and the k + 1
blocks of the fingerprint as plain columns (two fingerprints within k bits agree on at least one
of k + 1 blocks), a B-tree per block column, and one query: any block equal, then bit_count on
XOR. For MinHash LSH: `id int, signature bigint[]` and the band keys as plain columns, a B-tree
each, and one query: any band key equal, then the share of equal signature positions.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.index.modes.jaccard import dump_numpy_signatures
from simdb.ingest import COPY_HEADER, COPY_TRAILER
from simdb.plan.blocks import block_widths
from simdb.sketch.bits import to_signed
from simdb.sketch.minhash import Banding, UInt64Array


@dataclass(frozen=True)
class HandTable:
    """A loaded hand-written table: its name, k, how long loading took, and its size."""

    table: sql.Identifier
    max_distance: int
    load_seconds: float  # COPY and the B-tree builds
    bytes_per_row: float

    @property
    def widths(self) -> tuple[int, ...]:
        return block_widths(self.max_distance + 1)

    def query(self) -> sql.Composed:
        """SELECT id of the rows within %s bits: k + 1 block equalities (a BitmapOr), then bit_count.

        Parameters: the k + 1 blocks of the query fingerprint, the fingerprint, k.
        """
        blocks = sql.SQL(" OR ").join(
            sql.SQL("{} = %s").format(sql.Identifier(f"c{j}")) for j in range(len(self.widths))
        )
        return sql.SQL("SELECT id FROM {} WHERE ({}) AND bit_count((fp # %s)::bit(64)) <= %s").format(
            self.table, blocks
        )

    def arguments(self, fingerprint: int, k: int) -> tuple[int, ...]:
        return (*blocks_of(fingerprint, self.widths), to_signed(fingerprint), k)

    def pairs(self) -> sql.Composed:
        """SELECT a, b (ids, a < b) of every pair within %s bits: each block column joined with
        itself, bit_count on the pair, pairs found by several blocks kept once. Parameter: k,
        once per block."""
        return sql.SQL(" UNION ").join(
            sql.SQL(
                "SELECT x.id AS a, y.id AS b FROM {t} AS x JOIN {t} AS y ON x.{c} = y.{c}"
                " WHERE bit_count((x.fp # y.fp)::bit(64)) <= %s AND x.id < y.id"
            ).format(t=self.table, c=sql.Identifier(f"c{j}"))
            for j in range(len(self.widths))
        )


def blocks_of(value: int, widths: Sequence[int]) -> list[int]:
    """The blocks of an unsigned fingerprint, most significant first, as their columns store them
    (a whole 64-bit block, at k = 0, as a signed bigint)."""
    result, low = [], 64
    for width in widths:
        low -= width
        result.append(to_signed((value >> low) & ((1 << width) - 1)))
    return result


def _load(
    conn: Connection,
    table: sql.Identifier,
    columns: list[tuple[str, str]],
    fill: Callable[[psycopg.Cursor[Any], sql.Composed], int],
) -> tuple[float, float]:
    """CREATE TABLE table (columns), the rows copied by `fill` (a cursor and the COPY statement;
    it returns the rows), a B-tree on each column after the first two, VACUUM (ANALYZE); the
    seconds of COPY and B-tree builds, and the bytes of it all per row."""
    definitions = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in columns
    )
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(table, definitions))
    began = time.perf_counter()
    count = fill(conn.cursor(), sql.SQL("COPY {} FROM STDIN (FORMAT BINARY)").format(table))
    for name, _ in columns[2:]:
        conn.execute(sql.SQL("CREATE INDEX ON {} ({})").format(table, sql.Identifier(name)))
    loaded = time.perf_counter() - began
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
    size = conn.execute(
        sql.SQL("SELECT pg_total_relation_size({}::regclass)").format(sql.Literal(table.as_string(conn)))
    ).fetchone()
    return loaded, (size[0] if size else 0) / max(1, count)


def _copy_integers(cursor: psycopg.Cursor[Any], statement: sql.Composed, columns: list[np.ndarray]) -> int:
    """Binary COPY of rows of integer columns (int4 or int8 arrays, one value a row each), encoded
    by numpy a million rows at a time: a Python call per row would take longer than the server."""
    layout = [("fields", ">i2")]
    for number, column in enumerate(columns):
        layout += [
            (f"size{number}", ">i4"),
            (f"value{number}", ">i4" if column.dtype.itemsize == 4 else ">i8"),
        ]
    rows = len(columns[0])
    with cursor.copy(statement) as copy:
        copy.write(COPY_HEADER)
        for first in range(0, rows, 1_000_000):
            block = np.empty(min(rows - first, 1_000_000), dtype=layout)
            block["fields"] = len(columns)
            for number, column in enumerate(columns):
                block[f"size{number}"] = column.dtype.itemsize
                block[f"value{number}"] = column[first : first + len(block)]
            copy.write(block.tobytes())
        copy.write(COPY_TRAILER)
    return rows


def _write_rows(
    types: list[str], rows: Iterable[tuple[object, ...]], prepare: Callable[[psycopg.Cursor[Any]], None]
) -> Callable[[psycopg.Cursor[Any], sql.Composed], int]:
    """A fill for _load that copies rows of Python values, one write_row each."""

    def fill(cursor: psycopg.Cursor[Any], statement: sql.Composed) -> int:
        prepare(cursor)
        count = 0
        with cursor.copy(statement) as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)
                count += 1
        return count

    return fill


@contextmanager
def hand_table(conn: Connection, fingerprints: UInt64Array, max_distance: int) -> Iterator[HandTable]:
    """Load the fingerprints (row i has id i) into a scratch hand-written table; drop it afterwards."""
    table = sql.Identifier(f"simdb_bench_hand_{os.getpid()}")
    widths = block_widths(max_distance + 1)
    blocks = [(f"c{j}", "int4" if width <= 31 else "int8") for j, width in enumerate(widths)]
    values: list[np.ndarray] = [np.arange(len(fingerprints), dtype=np.int32), fingerprints.view(np.int64)]
    low = 64
    for width in widths:  # (as blocks_of cuts them)
        low -= width
        block = (fingerprints >> np.uint64(low)) & np.uint64((1 << width) - 1)
        values.append(block.astype(np.int32) if width <= 31 else block.view(np.int64))
    try:
        fill = functools.partial(_copy_integers, columns=values)
        loaded, size = _load(conn, table, [("id", "int4"), ("fp", "int8"), *blocks], fill)
        yield HandTable(table, max_distance, loaded, size)
    finally:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))


@dataclass(frozen=True)
class HandBands:
    """A loaded hand-written MinHash LSH table: `id int, signature bigint[]` and one plain column
    per band key with a B-tree each; candidates verified by counting equal signature positions."""

    table: sql.Identifier
    bands: int
    permutations: int
    load_seconds: float  # COPY and the B-tree builds
    bytes_per_row: float

    def _estimate(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        return sql.SQL("(SELECT count(*) FROM unnest({}, {}) AS t(x, y) WHERE x = y)::float8 / {}").format(
            a, b, sql.Literal(self.permutations)
        )

    def query(self) -> sql.Composed:
        """SELECT id of the rows sharing a band key with the signature and estimated >= %s.

        Parameters: the band keys, the signature, the threshold."""
        keys = sql.SQL(" OR ").join(
            sql.SQL("{} = %s").format(sql.Identifier(f"b{j}")) for j in range(self.bands)
        )
        return sql.SQL("SELECT id FROM {} WHERE ({}) AND {} >= %s").format(
            self.table, keys, self._estimate(sql.SQL("signature"), sql.SQL("%s::int8[]"))
        )

    def pairs(self) -> sql.Composed:
        """SELECT a, b (ids, a < b) of every pair sharing a band and estimated >= %s."""
        joins = sql.SQL(" UNION ").join(
            sql.SQL(
                "SELECT x.id AS a, y.id AS b FROM {t} AS x JOIN {t} AS y ON x.{c} = y.{c} AND x.id < y.id"
            ).format(t=self.table, c=sql.Identifier(f"b{j}"))
            for j in range(self.bands)
        )
        return sql.SQL(
            "SELECT p.a, p.b FROM ({}) AS p JOIN {t} AS x ON x.id = p.a JOIN {t} AS y ON y.id = p.b"
            " WHERE {} >= %s"
        ).format(joins, self._estimate(sql.SQL("x.signature"), sql.SQL("y.signature")), t=self.table)


@contextmanager
def hand_bands(
    conn: Connection, chunks: Iterable[UInt64Array], banding: Banding, permutations: int
) -> Iterator[HandBands]:
    """Load the signatures, given as 2-D arrays of rows (row i has id i), into a scratch
    hand-written band table; drop it afterwards. The signatures go through the same binary
    dumper as simdb's own COPY, so the load time compares what the server does."""
    table = sql.Identifier(f"simdb_bench_bands_{os.getpid()}")
    bands = [(f"b{j}", "int8") for j in range(banding.bands)]
    rows = (
        (number, signature, *keys)
        for number, (signature, keys) in enumerate(
            row
            for chunk in chunks
            for row in zip(chunk.view(np.int64), banding.keys_of(chunk).view(np.int64).tolist(), strict=True)
        )
    )
    columns = [("id", "int4"), ("signature", "int8[]"), *bands]
    try:
        fill = _write_rows([kind for _, kind in columns], rows, dump_numpy_signatures)
        loaded, size = _load(conn, table, columns, fill)
        yield HandBands(table, banding.bands, permutations, loaded, size)
    finally:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
