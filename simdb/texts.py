"""The texts behind an index's keys, for people to read them (`simdb serve`): kept, or reached.

`ingest --keep-text` keeps each document's text, zlib-compressed, in simdb."NAME__texts" (key,
body); once that table exists, every later ingest into the index keeps the texts it writes, and
the rows it or `delete`/`prune` remove lose theirs. Without it a text is reached where it lives:
an attached or in-table index's text column (by key), or a file by its path, read only for a key
that is stored in the index as a file's (it has a modification time). A key that is not in the
index is never read, whatever it names.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import psycopg
from psycopg import sql

from simdb import names, readers
from simdb.connection import Connection
from simdb.errors import InputError, SimdbError
from simdb.modes import Index

LEVEL = 6  # zlib's default: most of level 9's ratio at a fraction of its time
READ_LIMIT = 8 << 20  # at most this many bytes of a file are read (and compared)


def compress(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8", "surrogatepass"), LEVEL)


def decompress(body: bytes) -> str:
    return zlib.decompress(body).decode("utf-8", "replace")


def keeps(conn: Connection, index: Index) -> bool:
    """Whether index NAME keeps its documents' texts (`ingest --keep-text` made its texts table)."""
    row = conn.execute("SELECT to_regclass(%s)", (names.texts_table_name(index.name),)).fetchone()
    return row is not None and row[0] is not None


def create(conn: Connection, index: Index) -> None:
    """Make index NAME's texts table, if it has none, placed beside its rows (in a transaction)."""
    with conn.transaction():
        if keeps(conn, index):
            return
        table = names.texts_table(index.name)
        conn.execute(sql.SQL("CREATE TABLE {} (key text PRIMARY KEY, body bytea NOT NULL)").format(table))
        conn.execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN body SET STORAGE EXTERNAL").format(table)
        )  # (compressed already: TOAST need not try again)
        index.placement.place(conn, table, beside=index.storage.colocation(index))


def keep(conn: Connection, index: Index, texts: Mapping[str, str]) -> None:
    """Store these keys' texts (replacing what was kept), in the caller's transaction."""
    if not texts:
        return
    keys = sorted(texts)  # (the lock order of every writer)
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (key, body) SELECT * FROM unnest(%s::text[], %s::bytea[])"
            " ON CONFLICT (key) DO UPDATE SET body = excluded.body"
        ).format(names.texts_table(index.name)),
        (keys, [compress(texts[key]) for key in keys]),
    )


def forget(conn: Connection, index: Index, keys: Iterable[str]) -> None:
    """Remove the kept texts of these keys (their rows were removed, or they have no text now)."""
    conn.execute(
        sql.SQL("DELETE FROM {} WHERE key = ANY(%s)").format(names.texts_table(index.name)), (sorted(keys),)
    )


def forget_removed(conn: Connection, index: Index) -> None:
    """Remove the kept texts whose key is no longer in the index, if it keeps texts."""
    if keeps(conn, index):
        with conn.transaction():
            conn.execute(
                sql.SQL(
                    "DELETE FROM {texts} AS t WHERE NOT EXISTS (SELECT FROM {rows} AS r WHERE r.key = t.key)"
                ).format(texts=names.texts_table(index.name), rows=index.table)
            )


@dataclass(frozen=True)
class Usage:
    """What the kept texts take: rows, bytes on disk (table, TOAST and B-tree) and per row."""

    rows: int
    bytes: int
    text_bytes: int  # the texts' own size, uncompressed (UTF-8)

    @property
    def per_row(self) -> float:
        return self.bytes / self.rows if self.rows else 0.0


def usage(conn: Connection, index: Index) -> Usage:
    """The kept texts' rows and bytes (for the README's figure, and for people deciding)."""
    table = names.texts_table(index.name)
    row = conn.execute(
        sql.SQL("SELECT count(*), pg_total_relation_size(%s::regclass) FROM {}").format(table),
        (names.texts_table_name(index.name),),
    ).fetchone()
    bodies = conn.execute(sql.SQL("SELECT body FROM {}").format(table)).fetchall()
    original = sum(len(zlib.decompress(body)) for (body,) in bodies)
    return Usage(int(row[0]) if row else 0, int(row[1]) if row else 0, original)


@dataclass(frozen=True)
class Text:
    """A document's text as far as it is shown, or why there is none (`text` None, `missing` says)."""

    key: str
    text: str | None
    source: str  # where it came from: "kept text", "file", "column schema.table.text"
    length: int = 0  # characters in all (of what was read)
    cut: bool = False  # `text` is the first `limit` characters only
    missing: str = ""  # why no text could be reached
    changed: bool = False  # a file changed since it was ingested: its text may not be what was indexed


def read(conn: Connection, index: Index, key: str, limit: int) -> Text:
    """The text stored or reached for `key`, cut to `limit` characters; InputError if the index
    has no such key (nothing else is read then)."""
    row = conn.execute(
        sql.SQL("SELECT mtime_ns, size FROM {} WHERE key = %s").format(index.table), (key,)
    ).fetchone()
    if row is None:
        raise InputError(f"index {index.name!r} has no key {key!r}", "pick a key the index lists")
    mtime_ns, _ = row
    full = _reach(conn, index, key, mtime_ns)
    if full.text is None or len(full.text) <= limit:
        return full
    return Text(key, full.text[:limit], full.source, full.length, True, changed=full.changed)


def _reach(conn: Connection, index: Index, key: str, mtime_ns: int | None) -> Text:
    if keeps(conn, index):
        kept = conn.execute(
            sql.SQL("SELECT body FROM {} WHERE key = %s").format(names.texts_table(index.name)), (key,)
        ).fetchone()
        if kept is not None:
            text = decompress(kept[0])
            return Text(key, text, "kept text", len(text))
    source = index.storage.text_source()
    if source is not None:
        try:
            found = conn.execute(source.statement(), (key,)).fetchone()
        except psycopg.errors.InsufficientPrivilege:  # (a reader granted the index, not the table)
            where = source.describe()
            return Text(key, None, f"column {where}", missing=f"this role may not read {where}")
        if found is None or found[0] is None:
            where = source.describe()
            return Text(key, None, f"column {where}", missing=f"{where} has no text for it")
        text = str(found[0])
        return Text(key, text, f"column {source.describe()}", len(text))
    if mtime_ns is not None and os.path.isabs(key):  # stored as a file's: read by the path it is keyed by
        return _file(key, mtime_ns)
    if mtime_ns is not None:
        return Text(
            key,
            None,
            "",
            missing="a file keyed by its path relative to a folder (--relative-to) is not read;"
            " ingest with --keep-text to keep its text",
        )
    return Text(
        key,
        None,
        "",
        missing="its text was not kept (ingest with --keep-text to keep JSONL and CSV records' texts)",
    )


def _file(key: str, mtime_ns: int) -> Text:
    """A file's text as ingest reads it (gzip, byte-order marks); its first READ_LIMIT bytes only,
    if it is larger."""
    try:
        info = os.stat(key)
        if not stat.S_ISREG(info.st_mode):
            return Text(key, None, "file", missing="it is not a regular file now")
        if info.st_size > READ_LIMIT:
            with open(key, "rb") as file:
                text, _ = readers.decode(file.read(READ_LIMIT))
            return Text(key, text, "file", len(text), True, changed=info.st_mtime_ns != mtime_ns)
        text = readers.read_document(key).text
    except OSError as error:
        return Text(key, None, "file", missing=f"the file cannot be read now: {error.strerror}")
    except SimdbError as error:  # binary now, or gone
        return Text(key, None, "file", missing=f"the file cannot be shown: {error.message}")
    return Text(key, text, "file", len(text), changed=info.st_mtime_ns != mtime_ns)
