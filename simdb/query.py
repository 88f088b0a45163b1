"""Online queries: every stored row within k bits of a fingerprint, through simdb.near in SQL."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from simdb.bits import BITS, to_signed, to_unsigned
from simdb.connection import Connection
from simdb.index import Index


@dataclass(frozen=True)
class Match:
    """One near-duplicate: its key and Hamming distance to the query."""

    key: str
    distance: int

    @property
    def similarity(self) -> float:
        """1 - d/64: the share of fingerprint bits that agree."""
        return 1 - self.distance / BITS

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "distance": self.distance, "similarity": self.similarity}


def near(conn: Connection, index: Index, value: int, max_distance: int | None = None) -> list[Match]:
    """Rows within max_distance bits of an unsigned fingerprint, nearest first, then by key."""
    k = index.checked_distance(max_distance)
    statement = sql.SQL("SELECT key, distance FROM {}(%s, %s)").format(index.near_function)
    rows = conn.execute(statement, (to_signed(value), k), prepare=True).fetchall()
    return [Match(key, distance) for key, distance in rows]


def stored_fingerprint(conn: Connection, index: Index, key: str) -> int | None:
    """The unsigned fingerprint stored under a key, or None."""
    row = conn.execute(
        sql.SQL("SELECT fingerprint FROM {} WHERE key = %s").format(index.table), (key,)
    ).fetchone()
    return None if row is None else to_unsigned(row[0])
