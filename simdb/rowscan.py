"""Every row of an index as numpy arrays: a reference to find it again (its address, or its key)
and bigint expressions of it, for pairing in memory (simdb.pairing).

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
    """Row i is found again by references[i]; its value of expression e is values[e][i] (int64)."""

    references: np.ndarray  # ADDRESS records, or keys (objects)
    values: list[np.ndarray]

    def at(self, positions: np.ndarray) -> list[str]:
        """The references of these rows as text, for a tid[] or text[] parameter."""
        found = self.references[positions]
        if found.dtype == ADDRESS:
            return [f"({block},{offset})" for block, offset in found.tolist()]
        return list(found)


def read(conn: Connection, table: sql.Composable, expressions: list[sql.Composable]) -> Rows:
    """Each row's address and its value of each bigint expression (over alias r), in one row of
    binary strings (string_agg of each value's binary form); empty arrays for an empty table."""
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


def read_keyed(conn: Connection, table: sql.Composable, expressions: list[sql.Composable]) -> Rows:
    """Each row's key and its value of each bigint expression (over alias r), streamed in binary
    COPY: where row addresses do not identify a row (the shards of a distributed table)."""
    keys: list[str] = []
    columns: list[list[int]] = [[] for _ in expressions]
    statement = sql.SQL("COPY (SELECT r.key, {} FROM {} AS r) TO STDOUT (FORMAT BINARY)").format(
        sql.SQL(", ").join(expressions), table
    )
    with conn.cursor().copy(statement) as copy:
        copy.set_types(["text"] + ["int8"] * len(expressions))
        for key, *values in copy.rows():
            keys.append(key)
            for column, value in zip(columns, values, strict=True):
                column.append(value)
    return Rows(np.array(keys, dtype=object), [np.array(column, dtype=np.int64) for column in columns])
