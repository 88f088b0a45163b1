"""Online queries: the stored rows near a document's sketch, through the index's near function.

simhash indexes: every row within k bits of a fingerprint; jaccard indexes: every row sharing
a band with a signature whose estimated Jaccard is at or above the threshold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InputError, InvalidParameter
from simdb.index.modes import Index, Sketch


@dataclass(frozen=True)
class Match:
    """One near-duplicate: its key and its score, the Hamming distance on a simhash index or
    the estimated Jaccard (the share of equal signature positions) on a jaccard index.
    """

    key: str
    similarity: float | None
    distance: int | None = None

    def as_dict(self) -> dict[str, object]:
        scores = {"distance": self.distance, "similarity": self.similarity}
        return {"key": self.key, **{name: value for name, value in scores.items() if value is not None}}


@dataclass(frozen=True)
class Answer:
    """The matches of one query, for output: a distance column where the index has distances."""

    matches: list[Match]

    def as_dict(self) -> list[dict[str, object]]:
        return [match.as_dict() for match in self.matches]

    def lines(self) -> list[str]:
        header = "".join(
            f"{name:>{width}}  "
            for name, width in (("distance", 8), ("similarity", 10))
            if any(getattr(match, name) is not None for match in self.matches)
        )
        rows = [
            ("" if match.distance is None else f"{match.distance:>8}  ")
            + ("" if match.similarity is None else f"{match.similarity:>10.3f}  ")
            + match.key
            for match in self.matches
        ]
        return [header + "key", *rows]


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


@dataclass(frozen=True)
class Statement:
    """A statement and its parameters, built once for the sync API and simdb.aio alike."""

    text: sql.Composed
    params: tuple[Any, ...]
    prepare: bool | None = None


def near_statement(
    index: Index,
    value: Sketch,
    cutoff: float,
    filters: Filters | None = None,
    limit: int | None = None,
) -> Statement:
    """The query `near` runs: the index's near function, joined with its rows where `filters`
    have conditions (then not prepared: the conditions' values are literals)."""
    conditions = filters.conditions(sql.Identifier("r")) if filters else []
    if conditions:
        statement = sql.SQL(
            "SELECT n.key, n.{score} FROM {near}(%s, %s) WITH ORDINALITY AS n"
            " JOIN {table} AS r ON r.key = n.key WHERE {conditions} ORDER BY n.ordinality LIMIT %s"
        ).format(
            score=sql.Identifier(index.score_column),
            near=index.near_function,
            table=index.table,
            conditions=sql.SQL(" AND ").join(conditions),
        )
    else:
        statement = sql.SQL("SELECT * FROM {}(%s, %s) LIMIT %s").format(index.near_function)
    return Statement(statement, (index.to_sql(value), cutoff, limit), prepare=not conditions)


def matches(index: Index, rows: Iterable[tuple[str, Any]]) -> list[Match]:
    """The rows of a near statement as Matches."""
    return [Match(key, *index.scored(score)) for key, score in rows]


def near(
    conn: Connection,
    index: Index,
    value: Sketch,
    max_distance: int | None = None,
    filters: Filters | None = None,
    *,
    min_similarity: float | None = None,
    limit: int | None = None,
) -> list[Match]:
    """Rows near a sketch (an unsigned fingerprint, or a signature), nearest first, then by key;
    the first `limit` of them, if given.

    simhash indexes take `max_distance` (default: the index's k), jaccard indexes
    `min_similarity` (default: the index's threshold).
    """
    cutoff = index.cutoff(max_distance, min_similarity)
    statement = near_statement(index, value, cutoff, filters, limit)
    rows = conn.execute(statement.text, statement.params, prepare=statement.prepare).fetchall()
    return matches(index, rows)


def near_key(
    conn: Connection,
    index: Index,
    key: str,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    limit: int | None = None,
) -> list[Match]:
    """Rows near the row stored under `key` (itself included), as `near` finds them; InputError
    if the index has no such key."""
    return near(
        conn,
        index,
        found_sketch(index, key, stored(conn, index, key)),
        max_distance,
        min_similarity=min_similarity,
        limit=limit,
    )


@dataclass(frozen=True)
class Stored:
    """What an index holds for one key."""

    sketch: Sketch
    size: int | None
    extension: str | None


def stored_statement(index: Index, key: str) -> Statement:
    """The query `stored` runs."""
    return Statement(
        sql.SQL("SELECT {}, size, extension FROM {} WHERE key = %s").format(
            sql.Identifier(index.sketch_column), index.table
        ),
        (key,),
    )


def stored_row(index: Index, row: tuple[Any, Any, Any] | None) -> Stored | None:
    """A row of the stored statement as Stored, or None."""
    return None if row is None else Stored(index.from_sql(row[0]), row[1], row[2])


def stored(conn: Connection, index: Index, key: str) -> Stored | None:
    """The sketch (unsigned fingerprint or signature), size and extension stored under a key, or None."""
    statement = stored_statement(index, key)
    return stored_row(index, conn.execute(statement.text, statement.params).fetchone())


def found_sketch(index: Index, key: str, found: Stored | None) -> Sketch:
    """The sketch stored under `key`, or InputError naming the key."""
    if found is None:
        raise InputError(f"index {index.name!r} has no key {key!r}", "check the key")
    return found.sketch


NEAREST_TIMEOUT_MS = 2000  # a scan for the nearest row beyond reach gives up after this


@dataclass(frozen=True)
class Nearest:
    """The row nearest a sketch whatever its score, and the Jaccard similarity the score estimates."""

    key: str
    score: Any
    jaccard: float


def nearest(conn: Connection, index: Index, value: Sketch, leave_out: str | None = None) -> Nearest | None:
    """The row nearest `value` beyond the index's reach too (a scan of its rows, given up after
    NEAREST_TIMEOUT_MS), other than `leave_out`; None if the mode has no such scan, the index no
    other row, or the scan takes longer. `query` says it when nothing is within reach."""
    scan = index.nearest_scan()
    if scan is None:
        return None
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(NEAREST_TIMEOUT_MS),))
            row = conn.execute(scan, (index.to_sql(value), leave_out)).fetchone()
    except psycopg.errors.QueryCanceled:
        return None
    if row is None:
        return None
    return Nearest(row[0], row[1], index.jaccard_at(row[1]))
