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


def check_size_ratio(ratio: float | None) -> None:
    """A size ratio is a factor of 1 or more (the larger size over the smaller)."""
    if ratio is not None and ratio < 1:
        raise InvalidParameter(f"size ratio {ratio} is below 1", "give a factor such as 1.5")


@dataclass(frozen=True)
class Filters:
    """Cheap second filters after the Hamming match (Sadowski & Levin): same extension, similar size."""

    same_extension: bool = False  # keep rows whose extension is `extension` (NULL matches NULL)
    extension: str | None = None
    size: int | None = None  # the query document's size in bytes, with size_ratio
    size_ratio: float | None = None  # keep rows whose size is within this factor of `size`

    def __post_init__(self) -> None:
        check_size_ratio(self.size_ratio)

    def conditions(self, row: sql.Composable) -> list[sql.Composable]:
        """SQL conditions on a row alias (the values are quoted literals)."""
        result: list[sql.Composable] = []
        if self.same_extension:
            result.append(
                sql.SQL("{}.extension IS NOT DISTINCT FROM {}").format(row, sql.Literal(self.extension))
            )
        if self.size_ratio is not None and self.size is not None:
            result.append(
                sql.SQL("{row}.size BETWEEN {low} AND {high}").format(
                    row=row,
                    low=sql.Literal(self.size / self.size_ratio),
                    high=sql.Literal(self.size * self.size_ratio),
                )
            )
        return result


def near(
    conn: Connection,
    index: Index,
    value: int,
    max_distance: int | None = None,
    filters: Filters | None = None,
) -> list[Match]:
    """Rows within max_distance bits of an unsigned fingerprint, nearest first, then by key."""
    k = index.checked_distance(max_distance)
    conditions = filters.conditions(sql.Identifier("r")) if filters else []
    if conditions:
        statement = sql.SQL(
            "SELECT n.key, n.distance FROM {near}(%s, %s) AS n JOIN {table} AS r ON r.key = n.key"
            " WHERE {conditions} ORDER BY n.distance, n.key"
        ).format(near=index.near_function, table=index.table, conditions=sql.SQL(" AND ").join(conditions))
    else:
        statement = sql.SQL("SELECT key, distance FROM {}(%s, %s)").format(index.near_function)
    rows = conn.execute(statement, (to_signed(value), k), prepare=not conditions).fetchall()
    return [Match(key, distance) for key, distance in rows]


@dataclass(frozen=True)
class Stored:
    """What an index holds for one key."""

    fingerprint: int
    size: int | None
    extension: str | None


def stored(conn: Connection, index: Index, key: str) -> Stored | None:
    """The unsigned fingerprint, size and extension stored under a key, or None."""
    row = conn.execute(
        sql.SQL("SELECT fingerprint, size, extension FROM {} WHERE key = %s").format(index.table), (key,)
    ).fetchone()
    return None if row is None else Stored(to_unsigned(row[0]), row[1], row[2])
