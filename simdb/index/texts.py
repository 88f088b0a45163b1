"""The texts behind an index's keys, for people to read them (`simdb serve`): kept, or reached.

`ingest --keep-text` keeps each document's text, zlib-compressed, in simdb."NAME__texts" (key,
body); once that table exists, every later ingest into the index keeps the texts it writes, and
the rows it or `delete`/`prune` remove lose theirs. Without it a text is reached where it lives:
an attached or in-table index's text column (by key), or a file by its path, read only for a key
that is stored in the index as a file's (it has a modification time), and shown only while it is
still the file ingested (`ingested`). A key that is not in the index is never read, whatever it
names.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InputError, SimdbError
from simdb.index import names
from simdb.index.modes import Index, Sketch
from simdb.sources import readers
from simdb.sources.readers import Document

LEVEL = 6  # zlib's default: most of level 9's ratio at a fraction of its time
READ_LIMIT = 8 << 20  # at most this many characters of a text are read (and compared)
VERIFY_LIMIT = 64 << 20  # a larger file is not read again: its content cannot be checked cheaply


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
    """The kept texts' rows and bytes (for the figure in docs/serve.md, and for people deciding)."""
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
    changed: bool = False  # a file changed since it was ingested: nothing of it is shown


@dataclass(frozen=True)
class Recorded:
    """What ingest stored of a file: its size and modification time, and the index's sketch of
    the content it read (None: the file had no shingles)."""

    size: int | None
    mtime_ns: int
    sketch: Sketch | None


def read(conn: Connection, index: Index, key: str, limit: int) -> Text:
    """The text stored or reached for `key`, cut to `limit` characters; InputError if the index
    has no such key (nothing else is read then)."""
    row = conn.execute(
        sql.SQL("SELECT mtime_ns, size, {} FROM {} WHERE key = %s").format(
            sql.Identifier(index.sketch_column), index.table
        ),
        (key,),
    ).fetchone()
    if row is None:
        raise InputError(f"index {index.name!r} has no key {key!r}", "pick a key the index lists")
    mtime_ns, size, value = row
    recorded = None
    if mtime_ns is not None:
        recorded = Recorded(size, mtime_ns, None if value is None else index.from_sql(value))
    full = _reach(conn, index, key, recorded)
    if full.text is None or len(full.text) <= limit:
        return full
    return Text(key, full.text[:limit], full.source, full.length, True)


def _reach(conn: Connection, index: Index, key: str, recorded: Recorded | None) -> Text:
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
    if recorded is not None and os.path.isabs(key):  # stored as a file's: read by the path it is keyed by
        return _file(index, key, recorded)
    if recorded is not None:
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


def _file(index: Index, key: str, recorded: Recorded) -> Text:
    """A file's text, if it is still the file ingested (`ingested`), else why nothing is shown."""
    try:
        document = ingested(index, key, recorded)
    except FileChanged as error:
        return Text(
            key,
            None,
            "file",
            missing=f"the file changed since it was ingested ({error.message}); nothing of it is shown",
            changed=True,
        )
    except SimdbError as error:
        return Text(key, None, "file", missing=error.message)
    return Text(key, document.text, "file", len(document.text))


class FileChanged(InputError):
    """A file read again is not the one ingest read: it is not shown, compared or sampled."""


def ingested(index: Index, key: str, recorded: Recorded) -> Document:
    """The file ingested as `key`, read again only if it is still that file: the path's last part
    is no symbolic link (O_NOFOLLOW), it is a regular file of the size and modification time
    ingest stored, and the content read has the sketch the index stores for it (which catches a
    parent folder swapped for a link to a file of the same name, size and time). Every reader of
    a stored path goes through here. FileChanged if it is not the file ingested, InputError if it
    cannot be read or shown (binary, larger than VERIFY_LIMIT, gone)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(key, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FileChanged("a symbolic link is in its place") from error
        raise InputError(f"the file cannot be read now: {error.strerror}") from error
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise FileChanged("it is not a regular file now")
        if (info.st_size, info.st_mtime_ns) != (recorded.size, recorded.mtime_ns):
            raise FileChanged("its size or modification time differ")
        if info.st_size > VERIFY_LIMIT:
            raise InputError(
                f"it is larger than {VERIFY_LIMIT >> 20} MiB, too large to check against the index"
                " (ingest with --keep-text to keep its text)"
            )
        try:
            item = readers.read_opened(handle, key, raw=index.features.binary)
            if isinstance(item, Document):
                if not _same(index.sketches([item.content])[0], recorded.sketch):
                    raise FileChanged("its content is not what was indexed")
                if item.data is not None:  # (bytes features: checked raw, shown as ingest reads text)
                    item = readers.read_opened(handle, key)
        except (OSError, EOFError, zlib.error) as error:
            raise InputError(f"the file cannot be read now: {error}") from error
    if isinstance(item, readers.Skip):
        raise InputError("the file cannot be shown: it looks binary (it has NUL bytes)")
    return item


def _same(computed: Sketch | None, stored: Sketch | None) -> bool:
    """Whether two sketches are equal (a fingerprint, or a signature's values)."""
    if computed is None or stored is None:
        return computed is None and stored is None
    return bool(np.array_equal(np.asarray(computed), np.asarray(stored)))
