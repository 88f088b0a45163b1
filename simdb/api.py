"""A bound handle: an index and its connection in one object, for code that would rather not
pass (conn, index) to every call: `docs = simdb.connect(dsn).index("docs")`, `docs.near(text=...)`.

A thin layer over simdb.query and simdb.ingest (simdb.aio has the async flavour).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import TracebackType

from simdb import ingest, query
from simdb.db import connection
from simdb.db.connection import Connection
from simdb.errors import InvalidParameter
from simdb.follow import keep
from simdb.follow.base import Synced
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index, Sketch
from simdb.query import Match

Document = str | Sketch  # a text (sketched by the index) or its sketch


def sketch_of(index: Index, value: Document | None, text: str | None = None) -> Sketch:
    """The sketch of a text or a sketch, given exactly one."""
    if text is not None and value is None:
        return index.sketch(text)
    if value is None or text is not None:
        raise InvalidParameter("give a sketch or text=..., not both or neither", "e.g. near(text='a text')")
    return index.sketch(value) if isinstance(value, str) else value


class BoundIndex:
    """An index and a connection: near, near_key, add, delete (and sync, for an attached one)."""

    def __init__(self, conn: Connection, index: Index) -> None:
        self.conn = conn
        self.index = index

    def near(
        self,
        value: Sketch | None = None,
        *,
        text: str | None = None,
        k: int | None = None,
        min_similarity: float | None = None,
        limit: int | None = None,
    ) -> list[Match]:
        """Rows near a sketch or a text (one of them): within k bits (simhash; default the
        index's k) or at min_similarity (jaccard), nearest first."""
        sketch = sketch_of(self.index, value, text)
        return query.near(self.conn, self.index, sketch, k, min_similarity=min_similarity, limit=limit)

    def near_key(
        self, key: str, *, k: int | None = None, min_similarity: float | None = None, limit: int | None = None
    ) -> list[Match]:
        """Rows near the row stored under `key` (itself included)."""
        return query.near_key(self.conn, self.index, key, k, min_similarity=min_similarity, limit=limit)

    def add(self, documents: Mapping[str, Document]) -> tuple[int, int]:
        """Store {key: text or sketch} in one transaction; returns (inserted, updated). Refused
        where simdb does not write the index's rows itself (an attached index)."""
        self.index.storage.refuse_writes(self.index, "add")
        return ingest.store(
            self.conn, self.index, {key: sketch_of(self.index, value) for key, value in documents.items()}
        )

    def delete(self, keys: Iterable[str]) -> int:
        """Remove these keys' rows; returns how many existed."""
        return ingest.delete(self.conn, self.index, keys)

    def sync(self, *, full: bool = False) -> Synced:
        """Bring an attached index up to date with the table it follows (keep.sync)."""
        return keep.sync(self.conn, self.index.name, full=full)


class Database:
    """A connection to a database with simdb's schema, for bound indexes (`index`)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def index(self, name: str, *, create: bool = False) -> BoundIndex:
        """Index NAME bound to this connection (`create`: made with default settings if missing)."""
        index = indexes.get_or_create(self.conn, name) if create else indexes.get(self.conn, name)
        return BoundIndex(self.conn, index)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def connect(dsn: str | None = None) -> Database:
    """A connection (autocommit: simdb opens its own transactions) to the database the DSN names,
    or SIMDB_DSN, DATABASE_URL, PG* variables, as the CLI finds it."""
    return Database(connection.connect(connection.resolve(dsn)))
