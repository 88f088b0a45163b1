"""Change capture for an attached index: triggers queue the changed keys, a sync applies the queue.

`attach` (without --no-triggers) installs, in the index's own transaction, a queue table
simdb."NAME__queue" and statement-level triggers on the source table that record the keys of
the rows an INSERT, UPDATE or DELETE changed (one INSERT ... SELECT from the transition tables per
statement, so a bulk UPDATE costs one trigger call) and NOTIFY the index's channel as a wake-up.
A TRUNCATE empties the index at once. The trigger functions run with their owner's rights
(SECURITY DEFINER, a fixed search_path), so an application role that may write the table but
not simdb's schema still can.

On a table Citus distributes, triggers run on its shards, where they may write only the shards
beside them: there row triggers record each changed key in simdb."NAME__inbox", a table
distributed by the same column and co-located with the table, and each sync first moves the
inbox into the queue (one statement). A TRUNCATE is not recorded there (no row trigger fires,
and a shard's trigger cannot reach simdb's table): `simdb sync --full` after one.

A sync then takes batches of queued keys (FOR UPDATE SKIP LOCKED, one advisory lock per key, so
several syncs can run at once and never work on one key together), reads those keys' current
rows, and stores or removes them in the claim's transaction: a crash puts the claim back. A key
whose text has the MD5 stored already costs no fingerprinting. A batch that fails is taken again
key by key, and a key that still fails stays queued with its error (recorded in a transaction of
its own, as pgEdge's vectorizer learned), retried one at a time by later syncs.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

import psycopg
from psycopg import sql

from simdb import ingest
from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, PermissionDenied, SimdbError
from simdb.follow import side
from simdb.follow.base import TRIGGERS, Progress, Status, Synced
from simdb.index import catalog, names, placement, tables
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index

BATCH = 500  # keys claimed per transaction
_LOCKED_RETRIES = 20  # rounds to wait for keys another sync holds, before leaving them queued
_LOCKED_PAUSE = 0.05  # seconds between two such rounds
_FAILED_SHOWN = 10  # failed keys `simdb status` lists
# What a row's processing may raise that is the row's fault (a key PostgreSQL cannot store, a key
# shared by two rows, text a cast refuses): that row stays queued with the error. Anything else
# (a lost connection, a missing right) stops the sync.
_ROW_ERRORS = (
    SimdbError,
    ValueError,
    psycopg.errors.DataError,
    psycopg.errors.IntegrityError,
    psycopg.errors.ProgramLimitExceeded,
)


# --- installing and removing ---------------------------------------------------------------


def install(conn: Connection, index: Index, source: side.Source) -> None:
    """Create index NAME's queue, trigger functions, triggers and status view, and record that
    it has triggers; in the caller's transaction (attach's)."""
    name = index.name
    queue = names.queue_table(name)
    conn.execute(
        sql.SQL(
            "CREATE TABLE {} (key text NOT NULL, queued_at timestamptz NOT NULL DEFAULT now(),"
            " attempts integer NOT NULL DEFAULT 0, last_error text, failed_at timestamptz)"
        ).format(queue)
    )
    conn.execute(
        sql.SQL("CREATE INDEX {} ON {} USING hash (key)").format(  # (a B-tree would refuse long keys)
            sql.Identifier(names.queue_btree_name(name, "key")), queue
        )
    )
    conn.execute(
        sql.SQL("CREATE INDEX {} ON {} (attempts, queued_at)").format(
            sql.Identifier(names.queue_btree_name(name, "queued_at")), queue
        )
    )
    comment = f"simdb: the keys of {source.schema}.{source.table} changed since index {name} last synced"
    conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(queue, sql.Literal(comment)))
    distributed = placement.citus_table(conn, source.relation.as_string(conn))
    if distributed is None:
        bodies, each = _trigger_bodies(index, source), "FOR EACH STATEMENT"
    else:
        bodies, each = _shard_trigger_bodies(conn, index, source, distributed[1]), "FOR EACH ROW"
    try:
        for event, (referencing, body) in bodies.items():
            function = names.capture_function(name, event)
            conn.execute(
                sql.SQL(
                    "CREATE FUNCTION {}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
                    " SET search_path = pg_catalog, pg_temp AS {}"
                ).format(function, sql.Literal(body.as_string(conn)))
            )
            conn.execute(sql.SQL("REVOKE ALL ON FUNCTION {}() FROM PUBLIC").format(function))
            conn.execute(
                sql.SQL("CREATE TRIGGER {} AFTER {} ON {} {} {} EXECUTE FUNCTION {}()").format(
                    names.capture_trigger(name, event),
                    sql.SQL(event.upper()),
                    source.relation,
                    sql.SQL(referencing),
                    sql.SQL(each),
                    function,
                )
            )
    except psycopg.errors.InsufficientPrivilege as error:
        raise PermissionDenied(
            f"role {conn.info.parameter_status('session_authorization') or ''} may not add triggers to"
            f" {source.schema}.{source.table}: {str(error).splitlines()[0]}",
            "attach as the table's owner, or with --no-triggers (then each sync re-reads the table)",
        ) from error
    _create_status_view(conn, name, distributed is not None)
    catalog.set_capture(conn, name, TRIGGERS)


def _shard_trigger_bodies(
    conn: Connection, index: Index, source: side.Source, column: str
) -> dict[str, tuple[str, sql.Composed]]:
    """On a table Citus distributes by `column`: {event: ('', body)} of row triggers that run on
    its shards and record each changed key in the inbox, a table distributed by the same column
    and co-located with it (the one kind of table Citus lets a trigger on a shard write: the shard
    beside it). Made here, in the caller's transaction, with the setting Citus asks of triggers on
    a distributed table. TRUNCATE has no row trigger: `simdb sync --full` after one."""
    inbox = names.inbox_table(index.name)
    column_type, _ = tables.column_type(conn, source, column)
    # (one connection per worker for the rest of the transaction: see placement.Distributed.place)
    conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
    conn.execute(
        sql.SQL(
            "CREATE TABLE {} (source_key {} NOT NULL, key text NOT NULL,"
            " queued_at timestamptz NOT NULL DEFAULT now())"
        ).format(inbox, sql.SQL(column_type))
    )
    # (a shard moved by logical replication, as Citus' rebalancer may, needs a replica identity
    # on every table co-located with it; the inbox has no key of its own)
    conn.execute(sql.SQL("ALTER TABLE {} REPLICA IDENTITY FULL").format(inbox))
    conn.execute(
        "SELECT create_distributed_table(%s, 'source_key', colocate_with => %s)",
        (inbox.as_string(conn), source.relation.as_string(conn)),
    )
    conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
    key, text, shard = (
        sql.Identifier(source.key_column),
        sql.Identifier(source.text_column),
        sql.Identifier(column),
    )

    def record(row: str) -> sql.Composed:
        return sql.SQL(
            "IF {row}.{key} IS NOT NULL THEN INSERT INTO {inbox} (source_key, key)"
            " VALUES ({row}.{shard}, {row}.{key}::text); END IF;"
        ).format(row=sql.SQL(row), key=key, inbox=inbox, shard=shard)

    # an UPDATE records the key when its key or text changed (and then the old key too); with a
    # --where condition every updated key, as the statement triggers do
    changed = (
        sql.SQL("true")
        if source.condition
        else sql.SQL("OLD.{key} IS DISTINCT FROM NEW.{key} OR OLD.{text} IS DISTINCT FROM NEW.{text}").format(
            key=key, text=text
        )
    )
    moved = sql.SQL("OLD.{key} IS DISTINCT FROM NEW.{key}").format(key=key)
    done = sql.SQL(" RETURN NULL; END")
    return {
        "insert": ("", sql.SQL("BEGIN {}{}").format(record("NEW"), done)),
        "update": (
            "",
            sql.SQL("BEGIN IF {changed} THEN {new} IF {moved} THEN {old} END IF; END IF;{done}").format(
                changed=changed, new=record("NEW"), moved=moved, old=record("OLD"), done=done
            ),
        ),
        "delete": ("", sql.SQL("BEGIN {}{}").format(record("OLD"), done)),
    }


def _trigger_bodies(index: Index, source: side.Source) -> dict[str, tuple[str, sql.Composed]]:
    """{event: (REFERENCING clause, PL/pgSQL body)} of the four capture triggers."""
    name, queue = index.name, names.queue_table(index.name)
    key, text = sql.Identifier(source.key_column), sql.Identifier(source.text_column)
    wake = sql.SQL("IF FOUND THEN NOTIFY {}; END IF; RETURN NULL; END").format(names.channel(name))
    # An UPDATE queues a key when its key or text changed (a FULL JOIN on the key: a changed key
    # queues the old and the new one); with a --where condition every updated key, since any
    # column may decide whether the row still belongs (the sync reads the row and decides).
    changed = (
        sql.SQL("true")
        if source.condition
        else sql.SQL("o.{key} IS NULL OR n.{key} IS NULL OR o.{text} IS DISTINCT FROM n.{text}").format(
            key=key, text=text
        )
    )
    return {
        "insert": (
            "REFERENCING NEW TABLE AS new_rows",
            sql.SQL(
                "BEGIN INSERT INTO {queue} (key) SELECT n.{key}::text FROM new_rows AS n"
                " WHERE n.{key} IS NOT NULL; {wake}"
            ).format(queue=queue, key=key, wake=wake),
        ),
        "update": (
            "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
            sql.SQL(
                "BEGIN INSERT INTO {queue} (key) SELECT DISTINCT changed.key"
                " FROM old_rows AS o FULL JOIN new_rows AS n ON o.{key}::text = n.{key}::text"
                " CROSS JOIN LATERAL (VALUES (o.{key}::text), (n.{key}::text)) AS changed (key)"
                " WHERE changed.key IS NOT NULL AND ({changed}); {wake}"
            ).format(queue=queue, key=key, changed=changed, wake=wake),
        ),
        "delete": (
            "REFERENCING OLD TABLE AS old_rows",
            sql.SQL(
                "BEGIN INSERT INTO {queue} (key) SELECT o.{key}::text FROM old_rows AS o"
                " WHERE o.{key} IS NOT NULL; {wake}"
            ).format(queue=queue, key=key, wake=wake),
        ),
        # TRUNCATE has no transition table: the index is emptied in the same transaction (keys
        # still queued then find no row, and leave nothing behind).
        "truncate": (
            "",
            sql.SQL("BEGIN DELETE FROM {index}; RETURN NULL; END").format(index=index.table),
        ),
    }


def _create_status_view(conn: Connection, name: str, inbox: bool = False) -> None:
    """simdb."NAME__status": one row, what `simdb status NAME` shows (readers may be granted it).
    `inbox`: keys are recorded in the inbox first (on Citus), and pending there too."""
    queue = names.queue_table(name)
    pending: sql.Composable = queue
    if inbox:
        pending = sql.SQL(
            "(SELECT queued_at, attempts FROM {} UNION ALL SELECT queued_at, 0 FROM {})"
        ).format(queue, names.inbox_table(name))
    conn.execute(
        sql.SQL(
            "CREATE VIEW {view} AS SELECT s.index_name, s.capture, q.pending, q.failed,"
            " q.oldest_queued_at, now() - q.oldest_queued_at AS oldest_pending_age, q.last_error,"
            " s.synced_at FROM {sources} AS s CROSS JOIN LATERAL (SELECT count(*) AS pending,"
            " count(*) FILTER (WHERE attempts > 0) AS failed, min(queued_at) AS oldest_queued_at,"
            " (SELECT f.last_error FROM {queue} AS f WHERE f.attempts > 0"
            "  ORDER BY f.failed_at DESC LIMIT 1) AS last_error FROM {pending} AS p) AS q"
            " WHERE s.index_name = {name}"
        ).format(
            view=names.status_view(name),
            sources=catalog.SOURCES,
            queue=queue,
            pending=pending,
            name=sql.Literal(name),
        )
    )
    comment = f"simdb: how far index {name} lags behind its table (simdb status {name})"
    conn.execute(sql.SQL("COMMENT ON VIEW {} IS {}").format(names.status_view(name), sql.Literal(comment)))


def remove(conn: Connection, name: str) -> None:
    """Drop index NAME's triggers, their functions, its queue and status view (whatever exists),
    and record it as syncing by snapshots (migration 0012's downgrade)."""
    for statement in names.capture_objects(name):
        conn.execute(statement)


def queue_exists(conn: Connection, name: str) -> bool:
    return conn.execute("SELECT to_regclass(%s)", (names.queue_table_name(name),)).fetchone() != (None,)


# --- syncing -----------------------------------------------------------------------------------


@dataclass
class DrainReport(side.SyncReport):
    """What a sync from the queue did: SyncReport's counts over the keys it took, how many keys
    it took, and how many failed (left queued with their error)."""

    queued: int = 0
    failed: int = 0

    def summary(self) -> str:
        line = (
            f"synced: {self.added} new, {self.updated} updated, {self.removed} removed, {self.empty}"
            f" without text (not indexed); from the queue: {self.queued} changed keys, {self.unchanged}"
            " with their text as it was"
        )
        if self.failed:
            line += f"; {self.failed} failed and stay queued with their error (see `simdb status`)"
        return line

    def as_dict(self) -> dict[str, object]:
        return {**super().as_dict(), "queued": self.queued, "failed": self.failed}


def refuse_readers(conn: Connection, name: str) -> None:
    """PermissionDenied when the connected role may not write index NAME (nor take its queue):
    a reader cannot sync. Says so before anything is read."""
    names.check_name(name)
    row = conn.execute(
        "SELECT coalesce(has_table_privilege(to_regclass(%s), 'INSERT')"
        " AND has_table_privilege(to_regclass(%s), 'DELETE'), true)"
        " AND coalesce(has_table_privilege(to_regclass(%s), 'DELETE')"
        " AND has_table_privilege(to_regclass(%s), 'UPDATE'), true), current_user",
        (
            names.qualified(name),
            names.qualified(name),
            names.queue_table_name(name),
            names.queue_table_name(name),
        ),
    ).fetchone()
    if row is not None and not row[0]:
        raise PermissionDenied(
            f"role {row[1]} may not sync index {name!r}: a sync writes {names.qualified(name)}"
            f" and takes the keys queued in {names.queue_table_name(name)}",
            f"sync as the index's owner, or grant the role that: `simdb grant {name} --writer {row[1]}`",
        )


def sync(
    conn: Connection,
    name: str,
    progress: Callable[[int], object] | None = None,
    *,
    full: bool = False,
    jobs: int = 1,
    loaded: Index | None = None,
) -> side.SyncReport:
    """Bring attached index NAME up to date: from its queue when it has triggers; by comparing
    snapshots (side.compare) when it has none, when `full` (a repair), or for its first fill.
    `loaded`: the index, where the caller has loaded it already (keep.sync).

    A full sync of an index with triggers first clears the queue (the snapshot it then reads
    holds every change queued so far), and applies what was queued meanwhile after it."""
    refuse_readers(conn, name)
    index = loaded or indexes.get(conn, name)  # (IndexNotFound for a name that is none)
    source = side.source_of(conn, name)  # (the table and columns are there: the catalog says, not the table)
    if catalog.capture(conn, name) != TRIGGERS:
        return side.compare(conn, index, source, progress, jobs=jobs)
    work = _Work(conn, index, source)
    if not full and catalog.synced_at(conn, name) is not None:
        return drain(conn, work)
    with conn.transaction():
        _take_inbox(conn, work.inbox, work.queue)
        conn.execute(sql.SQL("DELETE FROM {}").format(work.queue))
    report = side.compare(conn, index, source, progress, jobs=jobs)
    after = drain(conn, work)
    for counter in ("inserted", "updated", "unchanged", "removed"):
        setattr(report, counter, getattr(report, counter) + getattr(after, counter))
    report.skipped.update(after.skipped)
    return report


def drain(conn: Connection, work: _Work, batch: int = BATCH) -> DrainReport:
    """Apply the keys queued for the index of `work`, batch by batch, until none is left that this
    sync may take: those queued before it began (an application writing faster than a sync
    applies would otherwise keep it going for ever; the next sync takes the rest). With nothing
    queued this reads neither the source table nor the index."""
    report = DrainReport()
    name, queue = work.index.name, work.queue
    _take_inbox(conn, work.inbox, queue)
    row = conn.execute("SELECT clock_timestamp()").fetchone()
    began: datetime = row[0] if row else datetime.now().astimezone()
    failed = [
        key
        for (key,) in conn.execute(sql.SQL("SELECT DISTINCT key FROM {} WHERE attempts > 0").format(queue))
    ]
    applied = bool(failed)
    for key in sorted(failed):
        work.one(key, report)
    waits = 0
    while True:
        picked, keys = 0, list[str]()
        try:
            with conn.transaction():
                picked, keys = _claim(conn, name, queue, batch, began)
                if keys:
                    applied = True
                    work.apply(keys, report)
        except _ROW_ERRORS:  # the batch, its claim included, rolled back: its keys one by one
            for key in keys:
                work.one(key, report)
        report.queued += len(keys)
        if not picked:
            break
        if not keys:  # all picked keys are another sync's for now: wait a little for them
            waits += 1
            if waits > _LOCKED_RETRIES:
                break
            time.sleep(_LOCKED_PAUSE)
    if applied:
        with conn.transaction():
            catalog.mark_synced(conn, name)
    return report


def _take_inbox(conn: Connection, inbox: sql.Identifier, queue: sql.Identifier) -> None:
    """Move the keys recorded in an index's inbox (on Citus) into its queue, in one transaction:
    a sync then claims them there as anywhere else (Citus locks rows FOR UPDATE on one shard only).
    Two syncs never take one inbox row twice: the second's DELETE waits for the first's."""
    if conn.execute("SELECT to_regclass(%s)", (inbox.as_string(conn),)).fetchone() == (None,):
        return
    with conn.transaction():
        conn.execute(
            sql.SQL(
                "WITH taken AS (DELETE FROM {} RETURNING key, queued_at)"
                " INSERT INTO {} (key, queued_at) SELECT key, queued_at FROM taken"
            ).format(inbox, queue)
        )


def _claim(
    conn: Connection, name: str, queue: sql.Identifier, batch: int, until: datetime
) -> tuple[int, list[str]]:
    """Take up to `batch` rows queued by `until` (oldest first, not failed, not locked by another
    sync), and delete those whose key this transaction could lock; (rows picked, distinct keys taken).

    Three statements, so that the advisory locks are tried on the picked keys alone (in one
    statement the planner may try them on every row it scans)."""
    picked = conn.execute(
        sql.SQL(
            "SELECT ctid::text, key FROM {} WHERE attempts = 0 AND queued_at <= %s ORDER BY queued_at"
            " LIMIT %s FOR UPDATE SKIP LOCKED"
        ).format(queue),
        (until, batch),
    ).fetchall()
    if not picked:
        return 0, []
    keys = _lock_keys(conn, name, sorted({str(key) for _, key in picked}))
    taken = set(keys)
    rows = [row for row, key in picked if key in taken]
    if rows:
        conn.execute(sql.SQL("DELETE FROM {} WHERE ctid = ANY(%s::tid[])").format(queue), (rows,))
    return len(picked), keys


def _lock_keys(conn: Connection, name: str, keys: list[str]) -> list[str]:
    """The keys whose advisory lock (for this transaction) no other sync holds: now ours."""
    return [
        str(key)
        for (key,) in conn.execute(
            "SELECT k FROM unnest(%s::text[]) WITH ORDINALITY AS u (k, n)"
            " WHERE pg_try_advisory_xact_lock(hashtext(%s), hashtext(k)) ORDER BY n",
            (keys, _lock_space(name)),
        )
    ]


def _lock_space(name: str) -> str:
    """The text whose hash is the first half of index NAME's per-key advisory locks."""
    return f"simdb {name}"


@dataclass
class _Work:
    """What applying queued keys needs of an index; what it reads of the source table's key
    column, only once a sync has keys to apply (a sync with nothing queued reads no catalog)."""

    conn: Connection
    index: Index
    source: side.Source
    seen: dict[str, int] = field(default_factory=dict)

    @property
    def queue(self) -> sql.Identifier:
        return names.queue_table(self.index.name)

    @property
    def inbox(self) -> sql.Identifier:
        """(On Citus: where the shards' triggers record keys.)"""
        return names.inbox_table(self.index.name)

    @functools.cached_property
    def key_type(self) -> str:
        return tables.key_facts(self.conn, self.source).type

    @functools.cached_property
    def linked(self) -> bool:
        """The index has source_key (--cascade): set it on the rows stored."""
        return indexes.has_column(self.conn, self.index.name, "source_key")

    def one(self, key: str, report: DrainReport) -> None:
        """Take and apply one key on its own; if that fails, record the error on its queued rows
        in a fresh transaction (the failed one rolled back its own bookkeeping)."""
        queue = self.queue
        try:
            with self.conn.transaction():
                if not _lock_keys(self.conn, self.index.name, [key]):
                    return  # another sync works on it
                rows = self.conn.execute(
                    sql.SQL("SELECT ctid::text FROM {} WHERE key = %s FOR UPDATE SKIP LOCKED").format(queue),
                    (key,),
                ).fetchall()
                if rows:
                    self.conn.execute(
                        sql.SQL("DELETE FROM {} WHERE ctid = ANY(%s::tid[])").format(queue),
                        ([row for (row,) in rows],),
                    )
                    self.apply([key], report)
        except _ROW_ERRORS as error:
            with self.conn.transaction():
                self.conn.execute(
                    sql.SQL(
                        "UPDATE {} SET attempts = attempts + 1, last_error = %s, failed_at = now()"
                        " WHERE key = %s"
                    ).format(queue),
                    (str(error), key),
                )
            report.failed += 1

    def apply(self, keys: list[str], report: DrainReport) -> None:
        """Store or remove these keys' current rows, in the caller's transaction: a row that is
        gone, no longer matches --where, or has no words leaves the index; a row whose text has
        the stored MD5 is left as it is, unread by the fingerprinter."""
        source, index = self.source, self.index
        key, text = sql.Identifier(source.key_column), sql.Identifier(source.text_column)
        rows = self.conn.execute(
            sql.SQL(
                "SELECT k.key, s.{key} IS NOT NULL, s.{text}, decode(md5(s.{text}), 'hex'),"
                " i.key IS NOT NULL, i.content_hash"
                " FROM unnest(%s::text[]) AS k (key) LEFT JOIN {rows} AS s ON s.{key} = k.key::{type}"
                " LEFT JOIN {index} AS i ON i.key = k.key"
            ).format(key=key, text=text, rows=source.rows, type=sql.SQL(self.key_type), index=index.table),
            (keys,),
        ).fetchall()
        _refuse_shared_keys(source, (row[0] for row in rows))
        gone, to_sketch = [], []
        for row_key, present, row_text, row_hash, indexed, stored_hash in rows:
            if not present or row_text is None:
                gone.append(row_key)
                report.removed += int(indexed and not present)
                report.skipped["empty"] += int(present)
            elif stored_hash is not None and bytes(stored_hash) == bytes(row_hash):
                report.unchanged += 1
            else:
                to_sketch.append((row_key, row_text, bytes(row_hash)))
        stored: list[ingest.Row] = []
        sketches = index.sketches([row_text for _, row_text, _ in to_sketch])
        for (row_key, row_text, row_hash), value in zip(to_sketch, sketches, strict=True):
            if value is None:
                gone.append(row_key)
                report.skipped["empty"] += 1
                continue
            stored.append(ingest.Row(row_key, value, len(row_text.encode("utf-8")), row_hash))
        if gone:
            ingest.remove(self.conn, index, gone)
        if stored:
            ingest.count_stored(report, len(stored), ingest.store_rows(self.conn, index, stored))
            if self.linked:
                self._link(sorted(row.key for row in stored))

    def _link(self, keys: list[str]) -> None:
        """source_key (the --cascade foreign key) on the rows just stored that lack it."""
        self.conn.execute(
            sql.SQL(
                "UPDATE {index} SET source_key = key::{type} WHERE key = ANY(%s) AND source_key IS NULL"
            ).format(index=self.index.table, type=sql.SQL(self.key_type)),
            (keys,),
        )


def _refuse_shared_keys(source: side.Source, keys: Iterable[str]) -> None:
    """A key that more than one current row has cannot be one index row (as a full sync says)."""
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise InvalidParameter(
                f"key column {source.key_column!r} of {source.schema}.{source.table} is not unique: "
                f"more than one row has {key!r}, and simdb keeps one index row per key",
                "give a unique --key-column (a primary key), or a --where that keeps one row per key",
            )
        seen.add(key)


# --- watching ----------------------------------------------------------------------------------


# --- status ------------------------------------------------------------------------------------


def status(conn: Connection, index: Index) -> Status:
    """Side table `index`'s capture, queue and last sync (InvalidParameter if it is not attached)."""
    name = index.name
    row = catalog.source_row(conn, name)
    if row is None:
        raise InvalidParameter(
            f"index {name!r} is not attached to a table", "attach one with `simdb attach NAME --table ...`"
        )
    table, mode = f"{row.schema}.{row.table}", catalog.capture(conn, name)
    if mode != TRIGGERS:
        return Status(name, table, mode, catalog.synced_at(conn, name))
    counts = conn.execute(
        sql.SQL("SELECT pending, failed, oldest_pending_age, synced_at FROM {}").format(
            names.status_view(name)
        )
    ).fetchone()
    pending, failed, age, synced = counts or (0, 0, None, None)
    failures = conn.execute(
        sql.SQL(
            "SELECT key, max(attempts), (array_agg(last_error ORDER BY failed_at DESC))[1] FROM {}"
            " WHERE attempts > 0 GROUP BY key ORDER BY max(failed_at) DESC, key LIMIT %s"
        ).format(names.queue_table(name)),
        (_FAILED_SHOWN,),
    ).fetchall()
    return Status(name, table, mode, synced, int(pending), int(failed), age, [tuple(f) for f in failures])


class SideTable:
    """How a side table follows its table: its queue of changes where it has triggers, else
    a compare of the whole table (simdb.follow.side); the follower of every index not in the
    application's own column (a sync of one ingested from files says it is not attached)."""

    def sync(self, conn: Connection, index: Index, progress: Progress, *, full: bool, jobs: int) -> Synced:
        return sync(conn, index.name, progress, full=full, jobs=jobs, loaded=index)

    def reindex(self, conn: Connection, index: Index, target: Index, progress: Progress, *, jobs: int) -> int:
        return side.reindex_rows(conn, index, target, progress, jobs=jobs)

    def status(self, conn: Connection, index: Index) -> Status:
        return status(conn, index)

    def notifies(self, conn: Connection, name: str) -> bool:
        return catalog.capture(conn, name) == TRIGGERS


FOLLOWER = SideTable()
