"""Online queries: every stored row within k bits of a fingerprint, through simdb.near in SQL."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from simdb.bits import BITS, to_signed, to_unsigned
from simdb.connection import Connection
from simdb.errors import InvalidParameter
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


def check_distance(index: Index, max_distance: int | None) -> int:
    """The distance to search: the index's k by default; above it, exactness is lost, so refuse."""
    k = index.plan.max_distance
    if max_distance is None:
        return k
    if not 0 <= max_distance <= k:
        raise InvalidParameter(
            f"max distance {max_distance} is outside 0..{k} for index {index.name!r}",
            f"an index answers exactly up to the distance it was created with; "
            f"create one with --max-distance {max_distance} for more",
        )
    return max_distance


def near(conn: Connection, index: Index, value: int, max_distance: int | None = None) -> list[Match]:
    """Rows within max_distance bits of an unsigned fingerprint, nearest first, then by key."""
    k = check_distance(index, max_distance)
    statement = sql.SQL("SELECT key, distance FROM {}(%s, %s)").format(index.near_function)
    rows = conn.execute(statement, (to_signed(value), k), prepare=True).fetchall()
    return [Match(key, distance) for key, distance in rows]


def stored_fingerprint(conn: Connection, index: Index, key: str) -> int | None:
    """The unsigned fingerprint stored under a key, or None."""
    row = conn.execute(
        sql.SQL("SELECT fingerprint FROM {} WHERE key = %s").format(index.table), (key,)
    ).fetchone()
    return None if row is None else to_unsigned(row[0])
