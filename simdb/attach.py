"""Near-duplicate search over a table the user already has: attach an index to it, keep it in sync.

The source table's columns are never altered (by default triggers are added to it, which queue
its changes: simdb.capture; this module's sync is the full compare, for --no-triggers indexes,
first fills and repairs). The index keeps its own rows keyed by the source key (as text) with an
MD5 of the source text, so a sync fingerprints only rows that are new or changed, and removes
rows whose source row is gone. With `cascade` (and a primary or unique key column),
the index rows also reference it with ON DELETE CASCADE and disappear with their source row at
once; that foreign key then stands in the way of TRUNCATE or DROP of the source table, so it is
asked for, never added by default.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from simdb import catalog, ingest
from simdb import index as indexes
from simdb.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter
from simdb.modes import Index, Sketch, Spec
from simdb.planner import DEFAULT_EXPECTED_ROWS
from simdb.simhash import DEFAULT_FEATURES, Features

BATCH = 2000
_LINK_ATTEMPTS = 5


class Source(catalog.SourceRow):
    """Where an attached index reads from: the catalog's record, as SQL pieces."""

    @property
    def relation(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.table)

    @property
    def rows(self) -> sql.Composable:
        """The source rows to index, as a subquery: the --where condition sees only the user's
        table (never simdb's, so no name is ambiguous) and is checked to stay inside its parentheses."""
        if not self.condition:
            return self.relation
        check_condition(self.condition)
        return sql.SQL("(SELECT * FROM {} WHERE ({}))").format(self.relation, sql.SQL(self.condition))


def check_condition(condition: str) -> None:
    """Refuse a --where condition that could reach outside its parentheses in simdb's statements.

    Quoted strings, quoted names, dollar quotes and /* comments */ are skipped; outside them the
    parentheses must balance, and `;` or a `--` comment (which would swallow what follows) are refused.
    """
    depth, at = 0, 0
    while at < len(condition):
        char, pair = condition[at], condition[at : at + 2]
        if char in "'\"":
            escapes = char == "'" and at > 0 and condition[at - 1] in "eE"
            at = _closing_quote(condition, at, char, escapes)
            if at == len(condition):
                raise _bad_condition(condition, f"a {char} quote in it is not closed")
        elif char == "$" and (tag := re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", condition[at:])):
            end = condition.find(tag.group(0), at + len(tag.group(0)))
            if end < 0:
                raise _bad_condition(condition, f"its dollar quote {tag.group(0)} is not closed")
            at = end + len(tag.group(0)) - 1
        elif pair == "/*":
            at = _comment_end(condition, at)
            if at == len(condition):
                raise _bad_condition(condition, "a /* comment in it is not closed")
        elif pair == "--" or char == ";":
            raise _bad_condition(condition, f"{pair if pair == '--' else char!r} is not allowed in it")
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise _bad_condition(condition, "it closes a parenthesis it did not open")
        at += 1
    if depth:
        raise _bad_condition(condition, "it leaves a parenthesis open")


def _closing_quote(text: str, start: int, quote: str, escapes: bool) -> int:
    """Index of the quote closing the one at `start` (a doubled quote stays inside), or the end."""
    at = start + 1
    while at < len(text):
        if escapes and text[at] == "\\":
            at += 2
            continue
        if text[at] == quote:
            if text[at + 1 : at + 2] != quote:
                return at
            at += 1
        at += 1
    return len(text)


def _comment_end(text: str, start: int) -> int:
    """Index of the last character of the (nestable) block comment opening at `start`."""
    depth, at = 0, start
    while at < len(text):
        if text.startswith("/*", at):
            depth, at = depth + 1, at + 2
        elif text.startswith("*/", at):
            depth, at = depth - 1, at + 2
            if depth == 0:
                return at - 1
        else:
            at += 1
    return len(text)


def _bad_condition(condition: str, why: str) -> InvalidParameter:
    return InvalidParameter(
        f"the --where condition {condition!r} is refused: {why}",
        "give one SQL condition over the table's columns, e.g. \"published AND lang = 'en'\"",
    )


def _check_row_alone(conn: Connection, source: Source, label: str) -> None:
    """Refuse a --where condition that looks beyond the row (a subquery, an aggregate, another
    table): PostgreSQL decides, as it does for a CHECK constraint, on an empty temporary copy of
    the table's columns (the user's table is neither locked nor changed)."""
    probe = sql.Identifier(source.table)  # (the copy has the table's name: `articles.lang` still works)
    try:
        with conn.transaction() as transaction:
            conn.execute(sql.SQL("CREATE TEMP TABLE {} (LIKE {})").format(probe, source.relation))
            conn.execute(
                sql.SQL("ALTER TABLE pg_temp.{} ADD CHECK ({})").format(
                    probe, sql.SQL(source.condition or "")
                )
            )
            raise psycopg.Rollback(transaction)
    except psycopg.Error as error:
        reason = str(error).splitlines()[0].replace(" in check constraint", "")
        raise InvalidParameter(
            f"the --where condition {source.condition!r} must look at one row of {label} alone: {reason}",
            "use the table's own columns, e.g. \"published AND lang = 'en'\"",
        ) from error


def parse_table(text: str) -> tuple[str, str]:
    """'schema.table' or 'table' (schema public) -> (schema, table)."""
    schema, dot, table = text.partition(".")
    if not dot:
        schema, table = "public", text
    if not schema or not table or "." in table:
        raise InvalidParameter(f"bad table name {text!r}", "write SCHEMA.TABLE, e.g. public.articles")
    return schema, table


def _column_type(conn: Connection, source: Source, column: str) -> tuple[str, str]:
    """The column's SQL type and its type category ('S' for the string types)."""
    row = conn.execute(
        "SELECT format_type(a.atttypid, a.atttypmod), t.typcategory FROM pg_attribute AS a"
        " JOIN pg_type AS t ON t.oid = a.atttypid"
        " JOIN pg_class AS c ON c.oid = a.attrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = %s AND a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped",
        (source.schema, source.table, column),
    ).fetchone()
    if row is None:
        raise InvalidParameter(
            f"table {source.schema}.{source.table} has no column {column!r}",
            "check --key-column and --text-column",
        )
    return str(row[0]), str(row[1])


def key_type(conn: Connection, source: Source) -> str:
    """The SQL type of the source's key column (what a queued key is cast back to)."""
    return _column_type(conn, source, source.key_column)[0]


def _key_is_unique(conn: Connection, source: Source) -> bool:
    """Whether the key column alone is a primary key or has a unique constraint."""
    row = conn.execute(
        "SELECT 1 FROM pg_constraint AS k JOIN pg_class AS c ON c.oid = k.conrelid"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = ANY(k.conkey)"
        " WHERE n.nspname = %s AND c.relname = %s AND k.contype IN ('p', 'u')"
        " AND cardinality(k.conkey) = 1 AND a.attname = %s",
        (source.schema, source.table, source.key_column),
    ).fetchone()
    return row is not None


def _a_duplicate_key(conn: Connection, source: Source) -> str | None:
    """One key value that more than one source row has (None when the key column is unique)."""
    if _key_is_unique(conn, source):
        return None
    row = conn.execute(
        sql.SQL("SELECT s.{key}::text FROM {rows} AS s GROUP BY 1 HAVING count(*) > 1 LIMIT 1").format(
            key=sql.Identifier(source.key_column), rows=source.rows
        )
    ).fetchone()
    return None if row is None else str(row[0])


def _refuse_duplicate_keys(conn: Connection, source: Source) -> None:
    """Each index row stands for one source row: a key shared by rows would merge them."""
    duplicate = _a_duplicate_key(conn, source)
    if duplicate is not None:
        raise InvalidParameter(
            f"key column {source.key_column!r} of {source.schema}.{source.table} is not unique: "
            f"more than one row has {duplicate!r}, and simdb keeps one index row per key",
            "give a unique --key-column (a primary key), or a --where that keeps one row per key",
        )


def _validate(conn: Connection, source: Source, cascade: bool) -> str:
    """Check the table, columns, condition and keys before anything is created; the key's type."""
    label = f"{source.schema}.{source.table}"
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (source.schema, source.table)
    ).fetchone()
    if found is None:
        raise InvalidParameter(f"no table {label}", "check --table (SCHEMA.TABLE)")
    key_type, _ = _column_type(conn, source, source.key_column)
    text_type, category = _column_type(conn, source, source.text_column)
    if category != "S":
        raise InvalidParameter(
            f"--text-column {source.text_column!r} of {label} is {text_type}, not text",
            "give a text or varchar column (a view can cast another type with ::text)",
        )
    if source.condition:
        try:
            with conn.transaction():
                conn.execute(sql.SQL("EXPLAIN SELECT 1 FROM {} AS s").format(source.rows))
        except psycopg.Error as error:
            raise InvalidParameter(
                f"the --where condition does not work on {label}: {str(error).splitlines()[0]}",
                'give a SQL condition over the table\'s columns, e.g. "published"',
            ) from error
        _check_row_alone(conn, source, label)
    if cascade and not _key_is_unique(conn, source):
        raise InvalidParameter(
            f"--cascade needs a primary or unique key column; {source.key_column!r} of {label} is not one",
            "leave out --cascade (sync removes deleted rows), or give a unique --key-column",
        )
    _refuse_duplicate_keys(conn, source)
    return key_type


def attach(
    conn: Connection,
    name: str,
    table: str,
    key_column: str,
    text_column: str,
    condition: str | None = None,
    spec: Spec | None = None,
    *,
    features: Features = DEFAULT_FEATURES,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    cascade: bool = False,
    triggers: bool = True,
) -> Index:
    """Create index NAME over an existing table: everything is checked first (the table, the
    columns' types, the --where condition, unique keys), then created in one transaction.
    `cascade`: index rows go with their source row at once (a foreign key; see the module).
    `triggers`: triggers on the table queue its changes for sync (simdb.capture); without, each
    sync compares the whole table with the index."""
    schema, relation = parse_table(table)
    source = Source(schema, relation, key_column, text_column, condition)
    key_type = _validate(conn, source, cascade)
    with conn.transaction():
        made = indexes.create(conn, name, spec, features=features, expected_rows=expected_rows)
        catalog.add_source(conn, name, source)
        if cascade:
            conn.execute(
                sql.SQL(
                    "ALTER TABLE {index} ADD COLUMN source_key {type} UNIQUE"
                    " REFERENCES {source} ({key}) ON DELETE CASCADE ON UPDATE SET NULL"
                ).format(
                    index=made.table,
                    type=sql.SQL(key_type),
                    source=source.relation,
                    key=sql.Identifier(key_column),
                )
            )
        if triggers:
            from simdb import capture  # (capture builds on this module)

            capture.install(conn, made, source)
    return made


def source_of(conn: Connection, name: str) -> Source:
    """The table index NAME follows, checked to be there still with its key and text columns
    (IndexMismatch, naming what went, before a sync or reindex changes anything)."""
    row = catalog.source_row(conn, name)
    if row is None:
        raise InvalidParameter(
            f"index {name!r} is not attached to a table", "attach one with `simdb attach NAME --table ...`"
        )
    source = Source(**dataclasses.asdict(row))
    table, columns = conn.execute(
        "SELECT count(c.oid) > 0,"
        " coalesce(array_agg(a.attname::text) FILTER (WHERE a.attname IS NOT NULL), '{}')"
        " FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " LEFT JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
        " AND a.attname = ANY(%s) WHERE n.nspname = %s AND c.relname = %s",
        ([source.key_column, source.text_column], source.schema, source.table),
    ).fetchone() or (False, [])
    label = f"{source.schema}.{source.table}"
    again = f"drop the index (`simdb drop {name}`) and attach it to the table as it is now"
    if not table:
        raise IndexMismatch(f"index {name!r} follows table {label}, which no longer exists", again)
    for column in (source.key_column, source.text_column):
        if column not in columns:
            raise IndexMismatch(
                f"index {name!r} follows column {column!r} of {label}, which is gone (renamed or dropped)",
                again,
            )
    return source


@dataclass
class SyncReport(ingest.Report):
    """What one sync did: ingest's counts (rows without text counted as "empty", and not in the
    index), and rows removed."""

    removed: int = 0

    @property
    def added(self) -> int:
        return self.inserted

    @property
    def empty(self) -> int:
        return self.skipped["empty"]

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def summary(self) -> str:
        return (
            f"synced: {self.added} new, {self.updated} updated, {self.removed} removed, "
            f"{self.empty} without text (not indexed); unchanged rows were compared by hash, not"
            " fingerprinted"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "empty": self.empty,
        }


def sync(
    conn: Connection, name: str, progress: Callable[[int], object] | None = None, *, full: bool = False
) -> SyncReport:
    """Sketch the source rows that are new or changed since the last sync; drop vanished ones.

    The changed rows are selected in one snapshot (a WITH HOLD cursor), then stored in batches of
    their own transactions, so a sync can run at any time, while the application writes, and be
    run again after a failure. An index with triggers syncs from its queue instead (simdb.capture),
    unless `full`: then this snapshot compare runs, as a repair, and the queue stays as it is.
    """
    if not full:
        from simdb import capture  # (capture builds on this module)

        return capture.sync(conn, name, progress)
    made = indexes.get(conn, name)
    source = source_of(conn, name)
    has_source_key = indexes.has_column(conn, made.name, "source_key")
    _refuse_duplicate_keys(conn, source)
    report = SyncReport()
    key, text = sql.Identifier(source.key_column), sql.Identifier(source.text_column)
    changed = sql.SQL(
        "SELECT s.{key}::text, s.{text}, decode(md5(s.{text}), 'hex')"
        " FROM {rows} AS s LEFT JOIN {index} AS i ON i.key = s.{key}::text"
        " WHERE s.{key} IS NOT NULL"
        " AND (s.{text} IS NULL OR i.content_hash IS DISTINCT FROM decode(md5(s.{text}), 'hex'))"
    ).format(key=key, text=text, rows=source.rows, index=made.table)
    _store_rows(conn, made, changed, f"simdb_sync_{name}", report, progress)
    if has_source_key:
        _link_source_keys(conn, made, source)
    with conn.transaction():
        gone = conn.execute(
            sql.SQL(
                "DELETE FROM {index} AS i WHERE NOT EXISTS"
                " (SELECT 1 FROM {rows} AS s WHERE s.{key}::text = i.key)"
            ).format(index=made.table, rows=source.rows, key=key)
        )
        report.removed = gone.rowcount
        catalog.mark_synced(conn, name)
    if report.changed:
        ingest.vacuum(conn, made)
    return report


@dataclass
class ReindexReport:
    """What `simdb reindex` did: the rows moved from one spec version to another."""

    name: str
    from_version: int
    to_version: int
    rows: int

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def lines(self) -> list[str]:
        if self.from_version == self.to_version:
            return [f"index {self.name} already uses spec v{self.to_version}; nothing to do"]
        moved = f"{self.rows} rows moved from spec v{self.from_version} to v{self.to_version}"
        return [f"reindexed {self.name}: {moved}"]


def reindex(conn: Connection, name: str, progress: Callable[[int], object] | None = None) -> ReindexReport:
    """Move attached index NAME to the newest spec of its mode, in place, batch by batch.

    Each batch re-sketches rows from the source table's text and updates them in its own
    transaction, so queries keep running (they see some rows moved and some not until the end);
    the catalog switches to the new spec in the last transaction. An interrupted reindex leaves
    the old spec recorded, and running it again completes the move.
    """
    made = indexes.get(conn, name)
    target = made.upgraded()
    if target is None:
        return ReindexReport(name, made.spec_version, made.spec_version, 0)
    try:
        source = source_of(conn, name)
    except InvalidParameter:
        raise InvalidParameter(
            f"index {name!r} was ingested from documents, whose text simdb does not keep, so it cannot "
            f"move it from spec v{made.spec_version} to v{target.spec_version} by itself",
            f"create a new index (`simdb create {name}_v{target.spec_version}`), ingest the same sources "
            f"into it again, and drop the old one once it is full",
        ) from None
    key, text = sql.Identifier(source.key_column), sql.Identifier(source.text_column)
    rows_to_move = sql.SQL(
        "SELECT i.key, s.{text}, decode(md5(s.{text}), 'hex')"
        " FROM {index} AS i JOIN {rows} AS s ON s.{key}::text = i.key"
        " WHERE s.{text} IS NOT NULL"
    ).format(key=key, text=text, rows=source.rows, index=made.table)
    report = ingest.Report()
    _store_rows(conn, target, rows_to_move, f"simdb_reindex_{name}", report, progress)
    with conn.transaction():
        catalog.set_spec_version(conn, name, target.spec_version)
    ingest.vacuum(conn, made)
    return ReindexReport(name, made.spec_version, target.spec_version, report.stored)


def _store_rows(
    conn: Connection,
    made: Index,
    statement: sql.Composed,
    cursor_name: str,
    report: ingest.Report,
    progress: Callable[[int], object] | None,
) -> None:
    """Sketch and store the (key, text, md5 of text) rows `statement` selects, in batches.

    The rows are selected in one snapshot (a WITH HOLD cursor) and each batch is stored in its
    own transaction; rows without text or without shingles are counted as "empty", and leave the
    index in the same transaction (their old sketch no longer describes them).
    """
    with conn.cursor(name=cursor_name, withhold=True) as cursor:
        with conn.transaction():
            cursor.execute(statement)
        while rows := cursor.fetchmany(BATCH):
            batch: dict[str, Sketch] = {}
            sizes, hashes, empty = {}, {}, []
            values = made.sketches([row_text or "" for _, row_text, _ in rows])
            for (row_key, row_text, row_hash), value in zip(rows, values, strict=True):
                if value is None:
                    empty.append(row_key)
                    continue
                batch[row_key] = value
                sizes[row_key] = len(row_text.encode("utf-8"))
                hashes[row_key] = bytes(row_hash)
            report.skipped["empty"] += len(empty)
            with conn.transaction():
                if empty:
                    ingest.delete(conn, made, empty)
                ingest.count_stored(report, len(batch), ingest.store(conn, made, batch, sizes, hashes))
            if progress is not None:
                progress(len(rows))


def _link_source_keys(conn: Connection, made: Index, source: Source) -> None:
    """Set source_key (the foreign key that cascades deletes) on rows that do not have it yet.

    A source row deleted while this runs makes the foreign key check fail; then try again, and
    the vanished row no longer matches. Rows left unlinked are still removed by the sync.
    """
    statement = sql.SQL(
        "UPDATE {index} AS i SET source_key = s.{key} FROM {source} AS s"
        " WHERE i.source_key IS NULL AND s.{key}::text = i.key"
    ).format(index=made.table, source=source.relation, key=sql.Identifier(source.key_column))
    for _ in range(_LINK_ATTEMPTS):
        try:
            with conn.transaction():
                conn.execute(statement)
            return
        except psycopg.errors.ForeignKeyViolation:
            continue


def watch(
    conn: Connection,
    name: str,
    interval: float,
    report: Callable[[SyncReport], None],
    rounds: int | None = None,
    stop: Callable[[], bool] | None = None,
) -> None:
    """Sync every `interval` seconds (polling) until interrupted, `rounds` times, or `stop()`
    says so; `report` the first round and each one that changed something."""
    done = 0
    while rounds is None or done < rounds:
        result = sync(conn, name)
        if done == 0 or result.changed:
            report(result)
        done += 1
        if stop is not None and stop():
            return
        if rounds is None or done < rounds:
            time.sleep(interval)
