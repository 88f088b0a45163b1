"""The hand-written block table that `simdb bench` measures simdb's index against, in the same run.

What a competent engineer writes without simdb: `id int, fp bigint` and the k + 1 blocks of the
fingerprint as plain columns (two fingerprints within k bits agree on at least one of k + 1
blocks), a B-tree per block column, and one query: any block equal, then bit_count on XOR.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from psycopg import sql

from simdb.bits import to_signed
from simdb.blocks import block_widths
from simdb.connection import Connection


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


def blocks_of(value: int, widths: Sequence[int]) -> list[int]:
    """The blocks of an unsigned fingerprint, most significant first, as their columns store them
    (a whole 64-bit block, at k = 0, as a signed bigint)."""
    result, low = [], 64
    for width in widths:
        low -= width
        result.append(to_signed((value >> low) & ((1 << width) - 1)))
    return result


@contextmanager
def hand_table(conn: Connection, fingerprints: Sequence[int], max_distance: int) -> Iterator[HandTable]:
    """Load the fingerprints (row i has id i) into a scratch hand-written table; drop it afterwards."""
    table = sql.Identifier(f"simdb_bench_hand_{os.getpid()}")
    widths = block_widths(max_distance + 1)
    types = ["int4" if width <= 31 else "int8" for width in widths]
    columns = sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(f"c{j}"), sql.SQL(kind)) for j, kind in enumerate(types)
    )
    conn.execute(sql.SQL("CREATE TABLE {} (id int4, fp int8, {})").format(table, columns))
    try:
        began = time.perf_counter()
        with conn.cursor().copy(sql.SQL("COPY {} FROM STDIN (FORMAT BINARY)").format(table)) as copy:
            copy.set_types(["int4", "int8", *types])
            for number, value in enumerate(fingerprints):
                copy.write_row((number, to_signed(value), *blocks_of(value, widths)))
        for j in range(len(widths)):
            conn.execute(sql.SQL("CREATE INDEX ON {} ({})").format(table, sql.Identifier(f"c{j}")))
        loaded = time.perf_counter() - began
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
        size = conn.execute(
            sql.SQL("SELECT pg_total_relation_size({}::regclass)").format(sql.Literal(table.as_string(conn)))
        ).fetchone()
        yield HandTable(table, max_distance, loaded, (size[0] if size else 0) / max(1, len(fingerprints)))
    finally:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
