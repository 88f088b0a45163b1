"""Indexes in the application's own table (storage.column): attach one, and fill its sketches.

`attach` checks the table and its columns, records the index, makes the view simdb."NAME" and,
with a text column, the triggers that clear a sketch whose text changed; then it builds the
B-trees on the table (CONCURRENTLY where it may: the application keeps writing meanwhile).
`fill` (what `simdb sync` does for such an index) sketches the rows whose sketch is missing,
found through a partial B-tree, so that it costs what changed, never a pass over the table.
Sketches the column held before the attach (an earlier index, dropped since, stopped clearing
them) are not trusted: the first fill sketches every row again and writes only the sketches that
differ, as `sync --full` does; the catalog's synced_at records that this was done.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import psycopg
from psycopg import sql

from simdb import ingest
from simdb.db.connection import Connection
from simdb.errors import IndexMismatch, InvalidParameter, PermissionDenied
from simdb.follow.base import IN_TABLE, Progress, Status, Synced
from simdb.index import catalog, names, tables
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index, SimhashSpec, Spec
from simdb.index.storage import InTable
from simdb.index.storage.shared import equivalents
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS
from simdb.sketch.features import DEFAULT_FEATURES, Features
from simdb.sources.readers import Document

BATCH = 2000
VACUUMS = 10  # a fill vacuums the table each time it has written a tenth of it (_sketch_rows)


def attach_in_table(
    conn: Connection,
    name: str,
    table: str,
    key_column: str,
    sketch_column: str,
    text_column: str | None = None,
    condition: str | None = None,
    spec: Spec | None = None,
    *,
    features: Features = DEFAULT_FEATURES,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    sketch_kind: str | None = None,
    defer_btrees: bool = False,
) -> Index:
    """Create index NAME in table's own `sketch_column` (keyed by `key_column`; with `text_column`,
    simdb fills the sketches from that text). Everything is checked before anything is made.
    `sketch_kind`: what the caller called the column ('fingerprint', 'signature'), checked against
    the mode's sketch. `defer_btrees` (with a text column, when a first fill follows): the sketch's
    B-trees are built at the end of that fill (fill), once, not updated row by row."""
    schema, relation = tables.parse_table(table)
    stored = InTable(schema, relation, key_column, sketch_column, text_column or None, condition)
    chosen = (spec or SimhashSpec()).in_application_table()
    if not text_column:
        chosen = chosen.for_column()
    index = dataclasses.replace(chosen.build(name, features, expected_rows), storage=stored)
    if sketch_kind is not None and sketch_kind != index.sketch_column:
        raise InvalidParameter(
            f"--{sketch_kind}-column does not apply to a {index.mode} index",
            f"give its {index.sketch_column}s with --{index.sketch_column}-column",
        )
    key_type = _validate(conn, index, stored)
    index = dataclasses.replace(index, placement=stored.placement(conn, name))
    row = catalog.SourceRow(schema, relation, key_column, text_column or "", condition, sketch_column)
    indexes.save(conn, index, row)
    concurrently = _may_build_concurrently(conn)
    statements = stored.lookup_btrees(index, key_type, concurrently=concurrently)
    if not (defer_btrees and stored.text_column):
        statements += _missing_sketch_btrees(conn, index, stored, set(), concurrently=concurrently).values()
    try:
        for statement in statements:
            conn.execute(statement)
    except BaseException:
        if concurrently:  # (inside a caller's transaction, its rollback undoes everything)
            indexes.drop(conn, name)
        raise
    if conn.autocommit:
        conn.execute(sql.SQL("ANALYZE {}").format(stored.relation))
    return indexes.get(conn, name)


def _rows(stored: InTable, *conditions: sql.Composable) -> list[sql.Composable]:
    """The conditions on the table's rows (aliased t), and the index's --where condition."""
    if stored.condition:
        return [*conditions, sql.SQL("({})").format(sql.SQL(stored.condition))]
    return list(conditions)


def _count(conn: Connection, stored: InTable, *conditions: sql.Composable) -> int:
    """How many of the table's rows (meeting --where) meet the conditions."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {} AS t WHERE {}").format(
            stored.relation, sql.SQL(" AND ").join(_rows(stored, *conditions))
        )
    ).fetchone()
    return 0 if row is None else int(row[0])


def _holds_sketches(conn: Connection, stored: InTable) -> bool:
    """Whether any row (meeting --where) has a sketch already: one the index did not make."""
    conditions = _rows(stored, sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(stored.sketch_column)))
    row = conn.execute(  # (not SELECT EXISTS (...): Citus cannot plan that on a distributed table)
        sql.SQL("SELECT true FROM {} AS t WHERE {} LIMIT 1").format(
            stored.relation, sql.SQL(" AND ").join(conditions)
        )
    ).fetchone()
    return row is not None


def _may_build_concurrently(conn: Connection) -> bool:
    """CREATE INDEX CONCURRENTLY where no transaction is open (the application keeps writing)."""
    return conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def _ensure_btrees(conn: Connection, index: Index, stored: InTable) -> None:
    """Build the sketch's B-trees that are missing or invalid (a first fill defers them: filling
    every row's sketch under B-trees costs several times building them once, after it)."""
    valid = conn.execute(
        "SELECT c.relname FROM pg_class AS c JOIN pg_index AS x ON x.indexrelid = c.oid"
        " WHERE c.relnamespace = %s::regnamespace AND c.relname = ANY(%s) AND x.indisvalid",
        (sql.Identifier(stored.schema).as_string(conn), stored.sketch_btree_names(index)),
    ).fetchall()
    if len(valid) == len(index.columns):
        return
    present = {str(name) for (name,) in valid}
    missing = _missing_sketch_btrees(conn, index, stored, present, concurrently=_may_build_concurrently(conn))
    for name, statement in missing.items():
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(stored.schema, name)))
        conn.execute(statement)
    if missing and conn.autocommit:
        conn.execute(sql.SQL("ANALYZE {}").format(stored.relation))


def _missing_sketch_btrees(
    conn: Connection, index: Index, stored: InTable, present: set[str], *, concurrently: bool
) -> dict[str, sql.Composed]:
    """The CREATE INDEX of each sketch B-tree neither `present` (valid, by simdb's name) nor on the
    table already under another name with the same definition (a Django SimhashIndex of the same
    settings): simdb's queries use that one, and a second copy would only cost writes."""
    shared = equivalents(conn, stored, index)
    statements = stored.sketch_btrees(index, concurrently=concurrently)
    return {
        name: statement
        for name, statement in zip(stored.sketch_btree_names(index), statements, strict=True)
        if name not in present and name not in shared
    }


def _validate(conn: Connection, index: Index, stored: InTable) -> str:
    """The table, its columns' types, the condition and the key's uniqueness; the key's type."""
    source = catalog.SourceRow(stored.schema, stored.table, stored.key_column, stored.text_column or "", None)
    tables.require_table(conn, source)
    key_type, _ = tables.column_type(conn, source, stored.key_column)
    option = f"--{index.sketch_column}-column"
    sketch_type, _ = tables.column_type(conn, source, stored.sketch_column, option)
    if sketch_type != index.column_type:
        raise InvalidParameter(
            f"{option} {stored.sketch_column!r} of {stored.label} is {sketch_type}; index {index.name!r}"
            f" ({index.mode}, {index.summary}) keeps {index.column_type}",
            f"add a column of that type (ALTER TABLE {stored.label} ADD COLUMN ... {index.column_type})",
        )
    if stored.text_column:
        tables.require_text(conn, source)
    else:
        _check_a_stored_sketch(conn, index, stored)
    if stored.condition:
        tables.check_condition(stored.condition)
        tables.check_row_alone(conn, dataclasses.replace(source, condition=stored.condition), stored.label)
    if not tables.key_is_unique(conn, source):
        raise InvalidParameter(
            f"--key-column {stored.key_column!r} of {stored.label} is not a primary key or unique",
            "give the table's primary key (an index in the table answers with one key per row)",
        )
    _refuse_taken_names(conn, index, stored)
    return key_type


def _check_a_stored_sketch(conn: Connection, index: Index, stored: InTable) -> None:
    """A column the application fills: one of its sketches is read and must be of the index's
    kind (a jaccard sketch of another spec or length would never be found)."""
    column = sql.Identifier(stored.sketch_column)
    row = conn.execute(
        sql.SQL("SELECT {c} FROM {t} WHERE {c} IS NOT NULL LIMIT 1").format(c=column, t=stored.relation)
    ).fetchone()
    if row is None:
        return
    try:
        index.to_sql(index.from_sql(row[0]))
    except InvalidParameter as error:
        raise InvalidParameter(
            f"--{index.sketch_column}-column {stored.sketch_column!r} of {stored.label} holds sketches "
            f"that index {index.name!r} does not take: {error.message}",
            "give the options its sketches were made with (a jaccard column: --signature-spec, "
            "--permutations and --threshold)",
        ) from None


def _refuse_taken_names(conn: Connection, index: Index, stored: InTable) -> None:
    """Refuse when a relation in the table's schema already has the name of one of simdb's
    B-trees: CREATE INDEX would fail, and the clean-up after it (a drop by name) would remove
    the application's own object."""
    taken = conn.execute(
        "SELECT c.relname::text FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = ANY(%s) ORDER BY 1",
        (stored.schema, stored.btree_names(index)),
    ).fetchall()
    if taken:
        listed = ", ".join(f"{stored.schema}.{relation}" for (relation,) in taken)
        raise InvalidParameter(
            f"index {index.name!r} would put B-trees on {stored.label} named as {listed},"
            " which exists already",
            f"pick another index name (simdb names its B-trees simdb_NAME_...), or rename {listed}",
        )


@dataclass
class FillReport:
    """What one fill did: rows given a sketch, rows whose text has no words (left without one);
    of a pass that `checked` every row's sketch against its text, also the rows whose sketch
    matched (left unwritten) and the stale sketches cleared (their text is NULL or has no words)."""

    name: str
    filled: int = 0
    empty: int = 0
    fills: bool = True  # False: the index has no text column; the application writes the sketches
    checked: bool = False
    unchanged: int = 0
    cleared: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.filled or self.cleared)

    def lines(self) -> list[str]:
        if not self.fills:
            return [f"index {self.name} has no text column: the application writes its sketches"]
        if self.checked:
            return [
                f"synced: {self.filled} {_sketches(self.filled)} filled or replaced, {self.cleared}"
                f" stale {_sketches(self.cleared)} cleared, {self.empty} rows whose text has no words"
                f" (left without one); {self.unchanged} rows whose sketch matched their text were"
                " not rewritten"
            ]
        return [
            f"synced: {self.filled} {_sketches(self.filled)} filled,"
            f" {self.empty} rows whose text has no words"
            " (left without one); rows with a sketch were not read"
        ]

    def as_dict(self) -> dict[str, object]:
        counts: dict[str, object] = {"filled": self.filled, "empty": self.empty}
        if self.checked:
            counts.update(unchanged=self.unchanged, cleared=self.cleared)
        return counts


def _sketches(count: int) -> str:
    return "sketch" if count == 1 else "sketches"


def fill(
    conn: Connection,
    index: Index,
    stored: InTable,
    progress: Callable[[int], object] | None = None,
    *,
    jobs: int = 1,
) -> FillReport:
    """Sketch the rows whose sketch is missing (and whose text is not NULL), in pages by key, each
    written in its own transaction; a row whose text changed since it was read, or whose sketch
    was set meanwhile, is left as the application made it."""
    report = FillReport(index.name, fills=stored.text_column is not None)
    if stored.text_column:
        with _filling(conn, index, stored, report):
            if catalog.synced_at(conn, index.name) is None and _holds_sketches(conn, stored):
                # sketches from before the attach (never synced since): check them
                _check_rows(conn, index, stored, report, progress, jobs=jobs)
            else:
                _sketch_rows(conn, index, stored, report, progress, missing_only=True, jobs=jobs)
            _ensure_btrees(conn, index, stored)
    return report


@contextlib.contextmanager
def _filling(conn: Connection, index: Index, stored: InTable, report: FillReport) -> Iterator[None]:
    """A fill's frame: the columns checked and readers refused first; the table vacuumed as the
    writes call for and the catalog told after."""
    _require_columns(conn, index, stored)
    _refuse_readers(conn, index, stored)
    yield
    _vacuum_after(conn, index, report)
    _mark_filled(conn, index, report)


def refill(
    conn: Connection,
    target: Index,
    stored: InTable,
    progress: Callable[[int], object] | None = None,
    *,
    jobs: int = 1,
) -> FillReport:
    """Sketch every row with text again under `target`'s spec (reindex, or the same spec: a
    repair, `sync --full`), in pages by key, each in its own transaction."""
    if not stored.text_column:
        raise InvalidParameter(
            f"index {target.name!r} has no text column: the application writes its"
            f" {stored.sketch_column} column, so simdb cannot move it to spec v{target.spec_version}",
            f"write every row's {stored.sketch_column} under spec v{target.spec_version}, then attach"
            " a new index to the column",
        )
    report = FillReport(target.name)
    with _filling(conn, target, stored, report):
        _check_rows(conn, target, stored, report, progress, jobs=jobs)
    return report


def _check_rows(
    conn: Connection,
    index: Index,
    stored: InTable,
    report: FillReport,
    progress: Callable[[int], object] | None,
    *,
    jobs: int = 1,
) -> None:
    """Sketch every row with text and write the sketches that differ from the stored ones (a row
    whose sketch matches is not rewritten: no dead tuple, no B-tree entry); clear the sketches of
    rows whose text is NULL or has no words. The caller records the check (_mark_filled sets
    synced_at)."""
    report.checked = True
    _sketch_rows(conn, index, stored, report, progress, missing_only=False, jobs=jobs)
    conditions = _rows(
        stored,
        sql.SQL("t.{} IS NULL").format(sql.Identifier(stored.text_column or "")),
        sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(stored.sketch_column)),
    )
    cleared = conn.execute(
        sql.SQL("UPDATE {} AS t SET {} = NULL WHERE {}").format(
            stored.relation, sql.Identifier(stored.sketch_column), sql.SQL(" AND ").join(conditions)
        )
    )
    report.cleared += cleared.rowcount


def _mark_filled(conn: Connection, index: Index, report: FillReport) -> None:
    """The fill read every row with text and no sketch (or every row with text), so those it found
    without words are all there are (catalog.mark_filled). A role that may write the column but
    not simdb's catalog (not given `simdb grant --writer`) fills all the same, unrecorded."""
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
        catalog.mark_filled(conn, index.name, report.empty, filled=bool(report.filled or report.checked))


def _vacuum_after(conn: Connection, index: Index, report: FillReport) -> None:
    """VACUUM (ANALYZE) the table after a fill of a page or more: each row filled left its old
    version behind (an UPDATE of an indexed column is never HOT), and until a VACUUM each sync
    walks their dead entries in the partial B-tree of unfilled rows. Smaller fills (`sync --watch`
    after a commit) are left to autovacuum. Only on an autocommit connection (ingest.vacuum)."""
    if report.filled >= BATCH:
        ingest.vacuum(conn, index)


def _refuse_readers(conn: Connection, index: Index, stored: InTable) -> None:
    """PermissionDenied, before anything is read, when the connected role may not write the
    sketch column: a sync writes it (a reader of the index may only query)."""
    row = conn.execute(
        "SELECT has_column_privilege(%s::regclass, %s, 'UPDATE'), current_user",
        (stored.relation.as_string(conn), stored.sketch_column),
    ).fetchone()
    if row is not None and not row[0]:
        raise PermissionDenied(
            f"role {row[1]} may not sync index {index.name!r}: a sync writes"
            f" {stored.label}.{stored.sketch_column}",
            f"sync as a role that may: the application grants UPDATE ({stored.sketch_column})"
            f" ON {stored.label}",
        )


def _require_columns(conn: Connection, index: Index, stored: InTable) -> None:
    """IndexMismatch, in one line naming it, when the table or a column the catalog records was
    renamed (PostgreSQL refuses to drop them while the view depends on them), before any read."""
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL, coalesce(array_agg(a.attname::text), '{}')"
        " FROM pg_attribute AS a WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0"
        " AND NOT a.attisdropped",
        (stored.relation.as_string(conn),) * 2,
    ).fetchone()
    present, columns = row if row is not None else (False, [])
    again = (
        f"rename it back, or drop the index (`simdb drop {index.name}`) and attach it to the table as"
        " it is now"
    )
    if not present:
        raise IndexMismatch(
            f"index {index.name!r} is in table {stored.label}, which is gone (renamed?)", again
        )
    for column in (stored.key_column, stored.sketch_column, stored.text_column):
        if column is not None and column not in columns:
            raise IndexMismatch(
                f"index {index.name!r} reads column {column!r} of {stored.label}, which is gone (renamed?)",
                again,
            )


def _sketch_rows(
    conn: Connection,
    index: Index,
    stored: InTable,
    report: FillReport,
    progress: Callable[[int], object] | None,
    *,
    missing_only: bool,
    jobs: int = 1,
    vacuums: int = VACUUMS,
) -> None:
    """Sketch the rows with text (`missing_only`: whose sketch is NULL, found by the partial
    B-tree) page by page in key order, by ingest's sketching threads (`jobs`), and write each
    page in its own transaction. Otherwise (a check of every row) only the sketches that differ
    are written, and a row whose text has no words loses a sketch it has. Each time it has
    written a `vacuums`-th of the table (of `vacuums` pages or more), it vacuums the table (on an
    autocommit connection): every row written leaves its old version behind (an UPDATE of an
    indexed column is never HOT), and the space a VACUUM frees takes the rows written after it,
    so a fill of every row grows the table by about a `vacuums`-th instead of doubling it."""
    key_type = _key_type(conn, stored)
    rows = _estimated_rows(conn, stored)  # (0 on Citus: the coordinator's table is an empty shell)
    every = rows // vacuums if vacuums and rows >= vacuums * BATCH else 0
    since = 0
    pages = _pages(conn, stored, key_type, missing_only=missing_only)
    for documents, values in ingest.sketched(pages, index, jobs, progress):
        hashed = [
            (document.key, value, (document.content_hash or b"").hex())
            for document, value in zip(documents, values, strict=True)
        ]
        written = [row for row in hashed if row[1] is not None]
        wordless = [] if missing_only else [(key, md5) for key, value, md5 in hashed if value is None]
        empty = len(documents) - len(written)
        report.empty += empty
        filled, cleared = _write(conn, index, stored, key_type, written, wordless, missing_only=missing_only)
        report.filled += filled
        report.cleared += cleared
        report.unchanged += len(documents) - empty - filled if not missing_only else 0
        since += filled
        if every and since >= every and conn.autocommit:
            conn.execute(sql.SQL("VACUUM {}").format(stored.relation))
            since = 0


def _estimated_rows(conn: Connection, stored: InTable) -> int:
    """The planner's estimate of the table's rows (0 where it has none yet)."""
    row = conn.execute(
        "SELECT reltuples FROM pg_catalog.pg_class WHERE oid = %s::regclass",
        (stored.relation.as_string(conn),),
    ).fetchone()
    return max(0, int(row[0])) if row else 0


def _pages(
    conn: Connection, stored: InTable, key_type: str, *, missing_only: bool
) -> Iterator[list[Document]]:
    """The rows with text (`missing_only`: and no sketch) as documents (key as text, the text, its
    MD5), page by page in key order: each page a statement of its own after the last key read."""
    key, text = sql.Identifier(stored.key_column), sql.Identifier(stored.text_column or "")
    missing = [sql.SQL("t.{} IS NULL").format(sql.Identifier(stored.sketch_column))] if missing_only else []
    conditions = _rows(stored, sql.SQL("t.{} IS NOT NULL").format(text), *missing)
    here = tables.md5_here(conn)
    page = sql.SQL(
        "SELECT t.{key}::text, t.{text}, {hashed} FROM {table} AS t WHERE {conditions}"
        " ORDER BY t.{key} LIMIT {n}"
    )
    hashed = sql.SQL("NULL::bytea" if here else "decode(md5(t.{}), 'hex')").format(text)
    after: list[Any] = []
    while True:
        where = (
            [*conditions, sql.SQL("t.{} > %s::{}").format(key, sql.SQL(key_type))] if after else conditions
        )
        statement = page.format(
            key=key,
            text=text,
            table=stored.relation,
            conditions=sql.SQL(" AND ").join(where),
            n=sql.Literal(BATCH),
            hashed=hashed,
        )
        rows = conn.execute(statement, after).fetchall()
        if not rows:
            return
        yield [
            Document(row_key, body, 1, content_hash=tables.text_md5(body) if here else bytes(md5))
            for row_key, body, md5 in rows
        ]
        after = [rows[-1][0]]


def _write(
    conn: Connection,
    index: Index,
    stored: InTable,
    key_type: str,
    rows: list[tuple[str, Any, str]],
    wordless: list[tuple[str, str]] | None = None,
    *,
    missing_only: bool = True,
) -> tuple[int, int]:
    """Set the sketch of these (key, sketch, md5 of the text sketched) rows, in one transaction,
    where the text is still the one sketched and (`missing_only`) the sketch still missing, or
    else the stored sketch differs; clear the sketch of the `wordless` (key, md5 of the text) rows
    whose text is still that. (Sketches written, sketches cleared.)"""
    if not rows and not wordless:
        return 0, 0
    stage = names.fill_stage_table(index.mode, index.sketch_size, index.name)
    with conn.transaction():
        conn.execute(
            sql.SQL(
                "CREATE TEMP TABLE IF NOT EXISTS {} (key text, {}, text_md5 text) ON COMMIT DELETE ROWS"
            ).format(stage, index.sketch_definition())
        )
        cursor = conn.cursor()
        to_copy = index.copy_sketches(cursor)
        columns = sql.SQL(", ").join(map(sql.Identifier, ("key", index.sketch_column, "text_md5")))
        ingest.copy_rows(
            cursor,
            stage,
            columns,
            ["text", index.sketch_type, "text"],
            [(k, to_copy(v), h) for k, v, h in rows],
        )
        sketch, staged = sql.Identifier(stored.sketch_column), sql.Identifier(index.sketch_column)
        which = (
            sql.SQL("t.{} IS NULL").format(sketch)
            if missing_only
            else sql.SQL("t.{} IS DISTINCT FROM s.{}").format(sketch, staged)
        )
        key, text = sql.Identifier(stored.key_column), sql.Identifier(stored.text_column or "")
        updated = conn.execute(
            sql.SQL(
                "UPDATE {table} AS t SET {sketch} = s.{staged} FROM {stage} AS s"
                " WHERE t.{key} = s.key::{key_type} AND md5(t.{text}) = s.text_md5 AND {which}"
            ).format(
                table=stored.relation,
                sketch=sketch,
                staged=staged,
                stage=stage,
                key=key,
                key_type=sql.SQL(key_type),
                which=which,
                text=text,
            )
        )
        cleared = 0
        if wordless:  # (any of these texts has no words: a row whose text has one of their MD5s neither)
            cleared = conn.execute(
                sql.SQL(
                    "UPDATE {table} AS t SET {sketch} = NULL WHERE t.{key} = ANY(CAST(%s AS {key_type}[]))"
                    " AND md5(t.{text}) = ANY(%s::text[]) AND t.{sketch} IS NOT NULL"
                ).format(
                    table=stored.relation, sketch=sketch, key=key, key_type=sql.SQL(key_type), text=text
                ),
                ([row_key for row_key, _ in wordless], [md5 for _, md5 in wordless]),
            ).rowcount
    return updated.rowcount, cleared


def unfilled(conn: Connection, stored: InTable) -> int:
    """Rows with text (meeting --where) and no sketch: what the next sync reads (found by the
    partial B-tree; text without words stays without a sketch, so it is counted each time)."""
    return _count(
        conn,
        stored,
        sql.SQL("t.{} IS NULL").format(sql.Identifier(stored.sketch_column)),
        sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(stored.text_column or "")),
    )


def unchecked(conn: Connection, name: str, stored: InTable) -> int:
    """Rows (meeting --where) whose sketch was there before index NAME was attached and is not
    checked against their text yet: the next sync sketches every row and checks them."""
    if not stored.text_column or catalog.synced_at(conn, name) is not None:
        return 0
    return _count(conn, stored, sql.SQL("t.{} IS NOT NULL").format(sql.Identifier(stored.sketch_column)))


def _key_type(conn: Connection, stored: InTable) -> str:
    return tables.key_type(conn, catalog.SourceRow(stored.schema, stored.table, stored.key_column, "", None))


def status(conn: Connection, index: Index) -> Status:
    """The rows a sync of index `index` would fill or check (nothing of an index whose application
    writes the sketches)."""
    stored, name = _stored(index), index.name
    synced = catalog.synced_at(conn, name)
    label = f"{stored.label}.{stored.sketch_column}"
    if not stored.text_column:
        return Status(name, label, IN_TABLE, synced)
    wordless, checking = catalog.wordless(conn, name), unchecked(conn, name, stored)
    pending = max(0, unfilled(conn, stored) - wordless) + checking
    return Status(name, label, IN_TABLE, synced, pending, unchecked=checking, wordless=wordless)


def _stored(index: Index) -> InTable:
    """The storage of an index this module follows (keep.FOLLOWERS picks it by its kind)."""
    return cast(InTable, index.storage)


class InTableFollower:
    """How an index in the application's own column follows its table: the table's triggers clear
    a sketch whose text changed and NOTIFY; a sync fills the missing sketches (`full`: checks
    every row's, a repair)."""

    def sync(self, conn: Connection, index: Index, progress: Progress, *, full: bool, jobs: int) -> Synced:
        if full:
            return refill(conn, index, _stored(index), progress, jobs=jobs)
        return fill(conn, index, _stored(index), progress, jobs=jobs)

    def reindex(self, conn: Connection, index: Index, target: Index, progress: Progress, *, jobs: int) -> int:
        refilled = refill(conn, target, _stored(index), progress, jobs=jobs)
        return (
            refilled.filled + refilled.unchanged
        )  # (a sketch the new spec leaves as it was is not rewritten)

    def status(self, conn: Connection, index: Index) -> Status:
        return status(conn, index)

    def notifies(self, conn: Connection, name: str) -> bool:
        return True


FOLLOWER = InTableFollower()
