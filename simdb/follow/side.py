"""A side table: simdb's own table of an index, kept equal by key to a table the user already has.

The source table's columns are never altered (by default triggers are added to it, which queue its
changes: simdb.follow.queue; this module's compare reads the whole table, for --no-triggers indexes,
first fills and repairs; simdb.follow.keep.attach makes one). The index keeps its own rows keyed by
the source key (as text) with an MD5 of the source text, so a sync fingerprints only rows that are
new or changed, and removes rows whose source row is gone. With `cascade` (and a primary or unique
key column), the index rows also reference it with ON DELETE CASCADE and disappear with their source
row at once; that foreign key then stands in the way of TRUNCATE or DROP of the source table, so it
is asked for, never added by default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import psycopg
from psycopg import sql

from simdb import ingest
from simdb.db.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter
from simdb.index import catalog, placement, tables
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index
from simdb.sources.readers import Document

BATCH = 2000  # rows of a page read from the source table, and of a batch stored
_LINK_ATTEMPTS = 5
# which rows of a page (p) _store_rows stores: a sync's (text new, changed, or gone: then it leaves
# the index) and a reindex's (in the index, with text)
_NEW_OR_CHANGED = sql.SQL(
    "p.body IS NULL OR (SELECT i.content_hash FROM {index} AS i WHERE i.key = p.key) IS DISTINCT FROM p.hash"
)
_INDEXED = sql.SQL("p.body IS NOT NULL AND EXISTS (SELECT FROM {index} AS i WHERE i.key = p.key)")
# a first fill's: the index is empty, so every row is new (no lookup of each row's stored hash)
_EVERY = sql.SQL("true")


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
        tables.check_condition(self.condition)
        return sql.SQL("(SELECT * FROM {} WHERE ({}))").format(self.relation, sql.SQL(self.condition))


def _a_duplicate_key(conn: Connection, source: Source, unique: bool) -> str | None:
    """One key value that more than one source row has (None when the key column is `unique`)."""
    if unique:
        return None
    row = conn.execute(
        sql.SQL("SELECT s.{key}::text FROM {rows} AS s GROUP BY 1 HAVING count(*) > 1 LIMIT 1").format(
            key=sql.Identifier(source.key_column), rows=source.rows
        )
    ).fetchone()
    return None if row is None else str(row[0])


def _refuse_duplicate_keys(conn: Connection, source: Source, unique: bool) -> None:
    """Each index row stands for one source row: a key shared by rows would merge them."""
    duplicate = _a_duplicate_key(conn, source, unique)
    if duplicate is not None:
        raise InvalidParameter(
            f"key column {source.key_column!r} of {source.schema}.{source.table} is not unique: "
            f"more than one row has {duplicate!r}, and simdb keeps one index row per key",
            "give a unique --key-column (a primary key), or a --where that keeps one row per key",
        )


def validate(conn: Connection, source: Source, cascade: bool) -> str:
    """Check the table, columns, condition and keys before anything is created; the key's type."""
    label = f"{source.schema}.{source.table}"
    tables.require_table(conn, source)
    key_type, _ = tables.column_type(conn, source, source.key_column)
    tables.require_text(conn, source)
    if source.condition:
        try:
            with conn.transaction():
                conn.execute(sql.SQL("EXPLAIN SELECT 1 FROM {} AS s").format(source.rows))
        except psycopg.Error as error:
            raise InvalidParameter(
                f"the --where condition does not work on {label}: {str(error).splitlines()[0]}",
                'give a SQL condition over the table\'s columns, e.g. "published"',
            ) from error
        tables.check_row_alone(conn, source, label)
    if cascade and not tables.key_is_unique(conn, source):
        raise InvalidParameter(
            f"--cascade needs a primary or unique key column; {source.key_column!r} of {label} is not one",
            "leave out --cascade (sync removes deleted rows), or give a unique --key-column",
        )
    _refuse_duplicate_keys(conn, source, tables.key_is_unique(conn, source))
    return key_type


def refuse_on_citus(conn: Connection, source: Source, *, cascade: bool, triggers: bool) -> None:
    """What a side table cannot do beside a Citus table (one that Citus' metadata lists): follow a
    reference or Citus-local table with triggers (a distributed one's triggers write an inbox
    beside its shards: simdb.follow.queue), or reference any with a foreign key. Comparing snapshots
    (--no-triggers) works beside all."""
    label = f"{source.schema}.{source.table}"
    found = placement.citus_table(conn, source.relation.as_string(conn))
    if found is None:
        return
    if triggers and found[0] != "h":
        raise InvalidParameter(
            f"{label} is a Citus table that is not hash-distributed: its triggers run on its"
            " shards, and Citus lets a trigger there write only the shards beside it, never simdb's"
            " queue of changes",
            "attach with --no-triggers (each sync then compares the whole table), or distribute the"
            " table by its key (create_distributed_table)",
        )
    if cascade:
        raise InvalidParameter(
            f"--cascade is refused on {label}, a Citus table: a foreign key from simdb's table on the"
            " coordinator to it would check the coordinator's empty shell, and no delete would cascade",
            "leave out --cascade: each sync removes the index rows whose source row is gone",
        )


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


def compare(
    conn: Connection,
    index: Index,
    source: Source,
    progress: Callable[[int], object] | None = None,
    *,
    jobs: int = 1,
) -> SyncReport:
    """Compare side table `index` with `source`, the table it follows: the table is read page by
    page in key order and the rows that are new or changed stored in batches of their own
    transactions (see _store_rows), so a compare can run at any time, while the application
    writes, and be run again after a failure; rows whose source row vanished are removed."""
    name = index.name
    key = tables.key_facts(conn, source)
    linked = indexes.has_column(conn, name, "source_key")  # (--cascade)
    distributed = placement.citus_table(conn, source.relation.as_string(conn)) is not None
    _refuse_duplicate_keys(conn, source, key.unique)
    report = SyncReport()
    wanted = _EVERY if ingest.is_empty(conn, index) else _NEW_OR_CHANGED
    _store_rows(conn, index, source, key, wanted, report, progress, jobs)
    if linked:
        _link_source_keys(conn, index, source)
    with conn.transaction():
        gone = conn.execute(
            sql.SQL(
                "DELETE FROM {index} AS i WHERE NOT EXISTS (SELECT 1 FROM {present} AS p WHERE p.key = i.key)"
            ).format(index=index.table, present=_present_keys(conn, source, distributed))
        )
        report.removed = gone.rowcount
        catalog.mark_synced(conn, name)
    if report.changed:
        ingest.vacuum(conn, index)
    return report


def _present_keys(conn: Connection, source: Source, distributed: bool) -> sql.Composable:
    """The source rows' keys as text (column key), for the DELETE of index rows whose source row
    is gone. A Citus table's are copied into a temporary table on the coordinator first (in the
    caller's transaction): Citus will not join a table of the coordinator's with a Citus table in
    a DELETE (it ships a reference table's join to a worker, where simdb's table is not);
    `distributed`: the source is such a table."""
    keys = sql.SQL("SELECT s.{}::text AS key FROM {} AS s").format(
        sql.Identifier(source.key_column), source.rows
    )
    if not distributed:
        return sql.SQL("({})").format(keys)
    present = sql.Identifier("pg_temp", "simdb_present_keys")
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(present))  # (a caller's transaction's)
    conn.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS {}").format(present, keys))
    return present


def reindex_rows(
    conn: Connection,
    index: Index,
    target: Index,
    progress: Callable[[int], object] | None = None,
    *,
    jobs: int = 1,
) -> int:
    """Sketch every indexed row of side table `index` again from its table's text, under `target`'s
    spec, batch by batch (each batch in its own transaction, so queries keep running); the rows
    moved. The caller switches the catalog to the new spec."""
    try:
        source = source_of(conn, index.name)
    except InvalidParameter:
        raise InvalidParameter(
            f"index {index.name!r} was ingested from documents, whose text simdb does not keep, so it"
            f" cannot move it from spec v{index.spec_version} to v{target.spec_version} by itself",
            f"create a new index (`simdb create {index.name}_v{target.spec_version}`), ingest the same"
            " sources into it again, and drop the old one once it is full",
        ) from None
    report = ingest.Report()
    _store_rows(conn, target, source, tables.key_facts(conn, source), _INDEXED, report, progress, jobs)
    return report.stored


def _store_rows(
    conn: Connection,
    index: Index,
    source: Source,
    key: tables.KeyFacts,
    wanted: sql.SQL,
    report: ingest.Report,
    progress: Callable[[int], object] | None,
    jobs: int = 1,
) -> None:
    """Sketch and store the source rows that `wanted` picks, through ingest's write pipeline
    (batches in their own transactions, `jobs` sketching threads); rows without text or without
    shingles are counted as "empty", and leave the index in their batch's transaction (their old
    sketch no longer describes them). `progress` gets the rows done.

    `wanted` is a condition on the page's row `p` (key as text, body, hash: the MD5 of body) and
    may look the row up in the index (`{index}`)."""
    documents = _table_documents(conn, index, source, key, wanted)
    ingest.write(
        conn, index, documents, report, batch_size=BATCH, progress=progress, jobs=jobs, drop_empty=True
    )


def _table_documents(
    conn: Connection, index: Index, source: Source, key_facts: tables.KeyFacts, wanted: sql.SQL
) -> Iterator[Document]:
    """The source rows `wanted` picks, as documents, read page by page in key order.

    Each page is a statement of its own, `key > (the last one) ORDER BY key LIMIT n` on the key
    column's own type, so the table's key index finds it and nothing holds a snapshot or writes
    temporary files; a row deleted meanwhile is simply not read, one inserted ahead is. A page's
    unwanted rows come back as their key alone. A key column without a B-tree is read in one
    snapshot instead (a WITH HOLD cursor: each page would otherwise scan the whole table)."""
    key, text = sql.Identifier(source.key_column), sql.Identifier(source.text_column)
    here = wanted is _EVERY and key_facts.md5_here  # (a first fill compares no stored hash)
    hashed = sql.SQL("NULL::bytea" if here else "decode(md5(s.{text}), 'hex')").format(text=text)
    row = sql.SQL("s.{key}::text AS key, s.{text} AS body, {hashed} AS hash").format(
        key=key, text=text, hashed=hashed
    )
    as_document = _hashed_document if here else _row_document
    rows = sql.SQL("{rows} AS s WHERE s.{key} IS NOT NULL").format(rows=source.rows, key=key)

    def judged(page: sql.Composable) -> sql.Composed:
        return sql.SQL("SELECT p.*, {wanted} AS wanted FROM ({page}) AS p").format(
            wanted=wanted.format(index=index.table), page=page
        )

    if not key_facts.has_btree:
        every = sql.SQL("SELECT {} FROM {}").format(row, rows)
        statement = sql.SQL("SELECT p.key, p.body, p.hash FROM ({} OFFSET 0) AS p WHERE p.wanted").format(
            judged(every)
        )
        with conn.cursor(name=f"simdb_rows_{index.name}", withhold=True) as cursor:
            with conn.transaction():
                cursor.execute(statement)
            while batch := cursor.fetchmany(BATCH):
                yield from (as_document(*values) for values in batch)
        return
    # (ORDER BY at each level: PostgreSQL then sees the rows come sorted, and sorts nothing;
    # OFFSET 0 keeps `wanted` from being evaluated once per use)
    page = sql.SQL(
        "SELECT p.key, p.wanted, CASE WHEN p.wanted THEN p.body END, CASE WHEN p.wanted THEN p.hash END"
        " FROM ({} ORDER BY p.at OFFSET 0) AS p ORDER BY p.at"
    )

    def statement_after(after: sql.Composable) -> sql.Composed:
        keyed = sql.SQL("SELECT {row}, s.{key} AS at FROM {rows}{after} ORDER BY s.{key} LIMIT %(n)s").format(
            row=row, key=key, rows=rows, after=after
        )
        return page.format(judged(keyed))

    first = statement_after(sql.SQL(""))
    key_type = sql.SQL(key_facts.type)
    later = statement_after(sql.SQL(" AND s.{} > CAST(%(after)s AS {})").format(key, key_type))
    found = conn.execute(first, {"n": BATCH}).fetchall()
    while found:
        picked = [(row_key, body, row_hash) for row_key, wanted_row, body, row_hash in found if wanted_row]
        yield from (as_document(*values) for values in picked)
        if len(found) < BATCH:
            return
        found = conn.execute(later, {"n": BATCH, "after": found[-1][0]}).fetchall()


def _row_document(key: str, body: str | None, content_hash: bytes | None) -> Document:
    """A source row as a document: one unit of progress; no text is an empty document."""
    return Document(key, body or "", 1, content_hash=None if content_hash is None else bytes(content_hash))


def _hashed_document(key: str, body: str | None, _: None) -> Document:
    """A source row as a document, with the MD5 of its text computed here."""
    return _row_document(key, body, None if body is None else tables.text_md5(body))


def _link_source_keys(conn: Connection, index: Index, source: Source) -> None:
    """Set source_key (the foreign key that cascades deletes) on rows that do not have it yet.

    A source row deleted while this runs makes the foreign key check fail; then try again, and
    the vanished row no longer matches. Rows left unlinked are still removed by the sync.
    """
    statement = sql.SQL(
        "UPDATE {index} AS i SET source_key = s.{key} FROM {source} AS s"
        " WHERE i.source_key IS NULL AND s.{key}::text = i.key"
    ).format(index=index.table, source=source.relation, key=sql.Identifier(source.key_column))
    for _ in range(_LINK_ATTEMPTS):
        try:
            with conn.transaction():
                conn.execute(statement)
            return
        except psycopg.errors.ForeignKeyViolation:
            continue
