"""Every row of an index as numpy arrays: its address (ctid) and bigint expressions of it, read in
one statement (string_agg of each value's binary form), for pairing in memory (simdb.pairing).

Addresses stay valid only within the snapshot that read them: read them, and the rows they point
to, in one REPEATABLE READ transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from psycopg import sql

from simdb.connection import Connection

ADDRESS = np.dtype([("block", ">u4"), ("offset", ">u2")])  # tidsend's six bytes


@dataclass(frozen=True)
class Rows:
    """Row i's address is addresses[i]; its value of expression e is values[e][i] (int64)."""

    addresses: np.ndarray
    values: list[np.ndarray]

    def tids(self, positions: np.ndarray) -> list[str]:
        """The addresses of these rows as tid literals, '(block,offset)', for a tid[] parameter."""
        return [f"({block},{offset})" for block, offset in self.addresses[positions].tolist()]


def read(conn: Connection, table: sql.Composable, expressions: list[sql.Composable]) -> Rows:
    """Each row's address and its value of each bigint expression (over alias r); empty arrays
    for an empty table."""
    aggregates = [sql.SQL("string_agg(tidsend(r.ctid), ''::bytea)")] + [
        sql.SQL("string_agg(int8send({}), ''::bytea)").format(expression) for expression in expressions
    ]
    row = conn.execute(
        sql.SQL("SELECT {} FROM {} AS r").format(sql.SQL(", ").join(aggregates), table)
    ).fetchone()
    if row is None or row[0] is None:
        return Rows(np.empty(0, dtype=ADDRESS), [np.empty(0, dtype=np.int64) for _ in expressions])
    return Rows(
        np.frombuffer(row[0], dtype=ADDRESS),
        [np.frombuffer(data, dtype=">i8").astype(np.int64) for data in row[1:]],
    )
