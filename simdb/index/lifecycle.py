"""Indexes in the database: create (catalog row, table, B-trees, functions), load, list, drop, grant.

What an index is and does depends on its mode (simdb.index.modes); this module only stores and finds
indexes, in one transaction each, through the catalog.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import IndexExists, IndexNotFound, InvalidParameter
from simdb.index import catalog, changes, dispatch, names, placement, storage
from simdb.index.modes import Index, SimhashSpec, Spec, index_class
from simdb.index.names import check_name
from simdb.index.placement import Distributed, Placement
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS
from simdb.sketch.features import DEFAULT_FEATURES, Features

AnyIndex = TypeVar("AnyIndex", bound=Index)


def create(
    conn: Connection,
    name: str,
    spec: Spec | None = None,
    *,
    features: Features = DEFAULT_FEATURES,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    placed: Placement = placement.LOCAL,
) -> Index:
    """Create an index of spec's mode (default: SimhashSpec()): catalog rows, table, B-trees,
    functions; `placed` Distributed() makes its table a Citus distributed table."""
    check_name(name)
    index = (spec or SimhashSpec()).build(name, features, expected_rows)
    saved = save(conn, dataclasses.replace(index, placement=placed))
    return dataclasses.replace(saved, placement=placement.of(conn, name))  # (with its shard count)


def save(conn: Connection, index: AnyIndex, source: catalog.SourceRow | None = None) -> AnyIndex:
    """Store a new index in one transaction: catalog rows (with `source`, the application's table
    it reads, recorded before the dispatcher asks where its rows are), table, B-trees and functions."""
    name = check_name(index.name)
    try:
        with conn.transaction():
            if table_exists(conn, name):
                raise IndexExists(
                    f"index {name!r} already exists",
                    f"pick another name, or drop it first with `simdb drop {name}`",
                )
            values: dict[str, object] = {
                "name": name,
                "mode": index.mode,
                "bits": index.bits,
                "features": str(index.features),
                "spec_version": index.spec_version,
                "expected_rows": index.expected_rows,
                **index.catalog_values(conn),
            }
            catalog.add_index(conn, values)
            if source is not None:
                catalog.add_source(conn, name, source)
            index.register(conn)
            comment = f"simdb {index.mode} index {name}: {index.summary}, {index.features}"
            index.create_objects(conn, str(values["near_sql"]), comment)
            conn.execute(changes.fresh_pairs_function(index, conn))
            dispatch.regenerate(conn)
    except psycopg.errors.UniqueViolation as error:
        raise IndexExists(f"index {name!r} already exists", "pick another name") from error
    return index


def table_exists(conn: Connection, table: str) -> bool:
    """Whether simdb.<table> exists."""
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (names.SCHEMA, table)
    ).fetchone()
    return found is not None


def has_column(conn: Connection, table: str, column: str) -> bool:
    """Whether simdb.<table> has a column of that name."""
    found = conn.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = %s AND table_name = %s"
        " AND column_name = %s",
        (names.SCHEMA, table, column),
    ).fetchone()
    return found is not None


def has_clusters(conn: Connection, name: str) -> bool:
    """Whether `simdb clusters` has made index NAME's clusters table."""
    return _exists(conn, names.clusters_table_name(name))


def _exists(conn: Connection, relation: str) -> bool:
    """Whether the table or view `relation` (schema.name) exists."""
    return conn.execute("SELECT to_regclass(%s)", (relation,)).fetchone() != (None,)


def get(conn: Connection, name: str) -> Index:
    """Load an index's parameters; refuse one made under settings this simdb cannot reproduce."""
    return catalog.run(conn, loading(name))


def loading(name: str) -> catalog.Reads[Index]:
    """`get` as the catalog reads it makes, without I/O (simdb.aio runs the same reads)."""
    check_name(name)
    rows = yield catalog.index_row_read(name)
    if not rows:
        raise IndexNotFound(
            f"no index named {name!r}",
            "check the name and the database: `simdb list` shows the indexes there",
        )
    row = rows[0]
    index = index_class(row["mode"]).from_row(row, catalog.orders_of((yield catalog.block_orders_read(name))))
    stored = storage.of(catalog.source_of((yield catalog.source_row_read(name))))
    found = yield from placement.citus_table_reads(stored.placed_relation(name), name)
    return dataclasses.replace(index, placement=stored.placement_of(found, name), storage=stored)


def get_or_create(
    conn: Connection, name: str, spec: Spec | None = None, created: Callable[[Index], object] | None = None
) -> Index:
    """The index NAME, created with `spec` (default: SimhashSpec()) if it does not exist yet, then
    passed to `created` (`ingest --create` says what the new index finds)."""
    try:
        return get(conn, name)
    except IndexNotFound:
        try:
            index = create(conn, name, spec)
        except IndexExists:  # created by a concurrent process in the meantime
            return get(conn, name)
        if created is not None:
            created(index)
        return index


@dataclass(frozen=True)
class Summary:
    """One line of `simdb list`: an index and its row count."""

    index: Index
    rows: int

    def as_dict(self) -> dict[str, object]:
        return {**self.index.as_dict(), "rows": self.rows}

    def lines(self) -> list[str]:
        """The index's row of the table, and what it finds on the line below."""
        index = self.index
        return [
            f"{index.name:<20} {index.mode:<8} {self.rows:>10}  {index.features!s:<8} "
            f"v{index.spec_version:<3}  {index.summary}{_semicolon(index.whereabouts)}",
            f"{'':<20} {index.finds}",
        ]


def _semicolon(text: str) -> str:
    return f"; {text}" if text else ""


@dataclass(frozen=True)
class Listing:
    """What `simdb list` shows: one Summary per index."""

    summaries: list[Summary]

    def as_dict(self) -> list[dict[str, object]]:
        return [summary.as_dict() for summary in self.summaries]

    def lines(self) -> list[str]:
        header = f"{'name':<20} {'mode':<8} {'rows':>10}  {'features':<8} {'spec':<4}  parameters"
        return [header, *(line for summary in self.summaries for line in summary.lines())]


def list_indexes(conn: Connection) -> list[Summary]:
    """The indexes the connected role may read (a role granted one index sees that one)."""
    result = []
    for name in catalog.index_names(conn):
        readable = conn.execute(
            "SELECT has_table_privilege(%s::regclass, 'SELECT')", (names.qualified(name),)
        ).fetchone()
        if not (readable and readable[0]):
            continue
        index = get(conn, name)
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(index.table)).fetchone()
        rows = count[0] if count else 0
        result.append(Summary(index, rows))
    return result


def distribute(conn: Connection, name: str, placed: Distributed) -> Index:
    """Make index NAME's table (and its clusters table) Citus distributed tables, rows included,
    and its functions those of a distributed index, in one transaction."""
    index = get(conn, name)
    if not index.storage.writes_own_rows:
        raise InvalidParameter(
            f"index {name!r} lives in an application's table ({index.storage.describe()}): its rows are"
            " where that table is",
            "distribute the application's table itself (SELECT create_distributed_table(...)), then"
            " drop the index and attach it again",
        )
    if index.placement.distributed:
        raise InvalidParameter(
            f"index {name!r} is distributed already ({index.placement.describe()})",
            "to change its shard count, use Citus' alter_distributed_table",
        )
    moved = dataclasses.replace(index, placement=placed)
    with conn.transaction():
        changes.untrack(conn, index)  # (Citus distributes no table with triggers)
        placed.place_index(conn, moved)
        clusters = names.clusters_table(name)
        if has_clusters(conn, name):
            placed.place(conn, clusters, beside=index.table)
        remake_functions(conn, moved)
        dispatch.regenerate(conn)
    return dataclasses.replace(moved, placement=placement.of(conn, name))


def remake_functions(conn: Connection, index: Index) -> None:
    """Index NAME's near, pairs and fresh pairs functions made again from this simdb's statements, wherever an
    earlier revision had them, and its near statement recorded (migrations that change them)."""
    for function in names.functions(index.name):
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS {}").format(function))
    near_sql = index.near_statement().as_string(conn)
    index.create_functions(conn, near_sql)
    conn.execute(changes.fresh_pairs_function(index, conn))
    catalog.set_near_sql(conn, index.name, near_sql)


def drop(conn: Connection, name: str) -> None:
    """Remove an index: its table, functions, clusters and catalog rows, in one transaction."""
    index = get(conn, name)
    with conn.transaction():
        drop_objects(conn, name, index.storage.drop_statements(index))
        dispatch.regenerate(conn)


def drop_objects(conn: Connection, name: str, first: Sequence[sql.Composed] = ()) -> None:
    """Everything index NAME owns (`first`: what its storage has outside simdb's schemas), and its
    catalog rows (also used by migrations' downgrades)."""
    for statement in [*first, *names.owned_objects(name)]:
        conn.execute(statement)
    catalog.remove_index(conn, name)


def grant(conn: Connection, name: str, role: str, *, writer: bool = False) -> None:
    """Let `role` query index NAME (reader), or also write its rows (writer); nothing more.

    A reader gets USAGE on the schema and SELECT on the index, its clusters, its kept texts and the catalog;
    simdb's functions are executable by everyone, as PostgreSQL grants by default (and everyone
    may use simdb_internal, where the ones they call are: migration 0011). A writer also gets
    INSERT, UPDATE and DELETE on the index's rows (and its probe table, laid out by prefix: a
    writer writes through simdb, which keeps both), and what a sync needs of the catalog (the
    source table itself is the application's to grant). An attached index with triggers has a
    status view, which a reader may read, and a queue, which a writer may take keys from.
    """
    index = get(conn, name)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists is None:
        raise InvalidParameter(f"no role named {role!r}", f"create it first, e.g. CREATE ROLE {role} LOGIN")
    who = sql.Identifier(role)
    written = [index.table]
    if _exists(conn, names.probes_table_name(name)):  # (laid out by prefix: its near reads them)
        written.append(names.probes_table(name))
    readable = [*written, *catalog.readable_tables()]
    if has_clusters(conn, name):
        readable.append(names.clusters_table(name))
    if _exists(conn, names.texts_table_name(name)):  # (kept texts: `simdb serve` shows them to a reader)
        readable.append(names.texts_table(name))
    queued = _exists(conn, names.queue_table_name(name))
    if queued:
        readable.append(names.status_view(name))
    with conn.transaction():
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(names.SCHEMA), who))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.SQL(", ").join(readable), who))
        if writer and index.storage.writes_own_rows:
            conn.execute(
                sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(sql.SQL(", ").join(written), who)
            )
            if _exists(conn, names.texts_table_name(name)):  # (its ingests keep their texts)
                texts = names.texts_table(name)
                conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(texts, who))
        if writer:
            for statement in catalog.sync_grants(who):
                conn.execute(statement)
            if queued:
                queue = names.queue_table(name)
                conn.execute(sql.SQL("GRANT SELECT, UPDATE, DELETE ON {} TO {}").format(queue, who))
            inbox = names.inbox_table(name)  # (on Citus: simdb.follow.queue)
            if queued and _exists(conn, inbox.as_string(conn)):
                conn.execute(sql.SQL("GRANT SELECT, DELETE ON {} TO {}").format(inbox, who))
