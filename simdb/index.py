"""Indexes: the catalog row with every parameter, and the table simdb."NAME" with one B-tree per table."""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg
from psycopg import sql

from simdb.bits import BITS
from simdb.blocks import DEFAULT_MAX_DISTANCE, BlockPlan
from simdb.connection import Connection
from simdb.errors import IndexExists, IndexMismatch, IndexNotFound, InvalidParameter
from simdb.planner import DEFAULT_EXPECTED_ROWS, plan_for
from simdb.schema import SCHEMA
from simdb.simhash import DEFAULT_FEATURES, SPEC_VERSION, Features
from simdb.sqlgen import (
    clusters_table,
    create_block_index,
    create_near_function,
    create_pairs_function,
    near_function,
    near_statement,
    pairs_function,
    pairs_statement,
    permuted,
    table_column,
)

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,39}")
# NAME__near, NAME__pairs, NAME__clusters belong to index NAME, so names never contain "__".
RESERVED_SEPARATOR = "__"


def check_name(name: str) -> str:
    """Index names are plain lower-case identifiers, so SQL users never need to quote them."""
    if not NAME_PATTERN.fullmatch(name) or RESERVED_SEPARATOR in name:
        raise InvalidParameter(
            f"bad index name {name!r}",
            "use 1 to 40 characters: a lower-case letter, then letters, digits or single '_'",
        )
    return name


@dataclass(frozen=True)
class Index:
    """An index's parameters as stored in the catalog."""

    name: str
    plan: BlockPlan
    features: Features
    expected_rows: int

    @property
    def columns(self) -> list[str]:
        """The permuted block columns, one per table: p0, p1, ..."""
        return [table_column(number) for number in range(len(self.plan.tables))]

    def checked_distance(self, max_distance: int | None) -> int:
        """The distance to search: the index's k by default; above it exactness is lost, so refuse."""
        k = self.plan.max_distance
        if max_distance is None:
            return k
        if not 0 <= max_distance <= k:
            raise InvalidParameter(
                f"max distance {max_distance} is outside 0..{k} for index {self.name!r}",
                f"an index answers exactly up to the distance it was created with; "
                f"create one with --max-distance {max_distance} for more",
            )
        return max_distance

    @property
    def table(self) -> sql.Identifier:
        """simdb."NAME", quoted for psycopg.sql."""
        return sql.Identifier(SCHEMA, self.name)

    @property
    def near_function(self) -> sql.Identifier:
        """simdb."NAME__near"(fingerprint, max_distance): the index's exact near query."""
        return sql.Identifier(SCHEMA, near_function(self.name))

    @property
    def pairs_function(self) -> sql.Identifier:
        """simdb."NAME__pairs"(max_distance): every pair within max_distance bits."""
        return sql.Identifier(SCHEMA, pairs_function(self.name))


def create(
    conn: Connection,
    name: str,
    *,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    blocks: int | None = None,
    features: Features = DEFAULT_FEATURES,
    workload: str = "both",
) -> Index:
    """Create the catalog rows, the table, its B-trees and functions in one transaction.

    Without `blocks`, the planner picks b for `expected_rows`, `max_distance` and `workload`.
    """
    check_name(name)
    plan = BlockPlan(
        max_distance, blocks if blocks is not None else plan_for(expected_rows, max_distance, workload).blocks
    )
    index = Index(name, plan, features, expected_rows)
    near_sql = near_statement(name, plan).as_string(conn)
    try:
        with conn.transaction():
            if table_exists(conn, name):
                raise IndexExists(
                    f"index {name!r} already exists",
                    f"pick another name, or drop it first with `simdb drop {name}`",
                )
            conn.execute(
                "INSERT INTO simdb._indexes (name, bits, max_distance, blocks, block_widths,"
                " features, spec_version, expected_rows, near_sql)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    name,
                    BITS,
                    plan.max_distance,
                    plan.blocks,
                    list(plan.widths),
                    str(features),
                    SPEC_VERSION,
                    expected_rows,
                    near_sql,
                ),
            )
            for number, table in enumerate(plan.tables):
                conn.execute(
                    "INSERT INTO simdb._tables (index_name, table_no, column_name, block_order,"
                    " prefix_bits) VALUES (%s, %s, %s, %s, %s)",
                    (name, number, table_column(number), list(table.order), table.prefix_bits),
                )
            _create_table(conn, index)
            conn.execute(create_near_function(name, near_sql))
            conn.execute(create_pairs_function(name, pairs_statement(name, plan).as_string(conn)))
    except psycopg.errors.UniqueViolation as error:
        raise IndexExists(f"index {name!r} already exists", "pick another name") from error
    return index


def _create_table(conn: Connection, index: Index) -> None:
    # The permuted columns are computed by PostgreSQL from the fingerprint, so any application
    # can insert (key, fingerprint) in plain SQL and get the same values simdb would compute.
    fingerprint = sql.Identifier("fingerprint")
    generated = sql.SQL(", ").join(
        sql.SQL("{} bigint GENERATED ALWAYS AS ({}) STORED").format(
            sql.Identifier(table_column(number)), permuted(table, fingerprint)
        )
        for number, table in enumerate(index.plan.tables)
    )
    conn.execute(
        sql.SQL(
            "CREATE TABLE {table} ("
            " id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " key text NOT NULL UNIQUE,"
            " fingerprint bigint NOT NULL,"
            " size bigint,"
            " content_hash bytea,"
            " extension text,"
            " {generated},"
            " added_at timestamptz NOT NULL DEFAULT now())"
        ).format(table=index.table, generated=generated)
    )
    conn.execute(
        sql.SQL("COMMENT ON TABLE {} IS {}").format(
            index.table,
            sql.Literal(f"simdb index {index.name}: {index.plan.max_distance} bits, {index.features}"),
        )
    )
    for number, table in enumerate(index.plan.tables):
        conn.execute(create_block_index(index.name, number, table))


def table_exists(conn: Connection, table: str) -> bool:
    """Whether simdb.<table> exists."""
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (SCHEMA, table)
    ).fetchone()
    return found is not None


def get(conn: Connection, name: str) -> Index:
    """Load an index's parameters; refuse one made under settings this simdb cannot reproduce."""
    check_name(name)
    row = conn.execute(
        "SELECT bits, max_distance, blocks, features, spec_version, expected_rows"
        " FROM simdb._indexes WHERE name = %s",
        (name,),
    ).fetchone()
    if row is None:
        raise IndexNotFound(
            f"no index named {name!r}",
            f"create it with `simdb create {name}`; `simdb list` shows the indexes",
        )
    bits, max_distance, blocks, features, spec_version, expected_rows = row
    if bits != BITS or spec_version != SPEC_VERSION:
        raise IndexMismatch(
            f"index {name!r} holds {bits}-bit fingerprints of spec v{spec_version}; "
            f"this simdb makes {BITS}-bit fingerprints of spec v{SPEC_VERSION}",
            "use the simdb version that built it, or create a new index and re-ingest",
        )
    plan = BlockPlan(max_distance, blocks)
    stored = conn.execute(
        "SELECT block_order FROM simdb._tables WHERE index_name = %s ORDER BY table_no", (name,)
    ).fetchall()
    if [list(order) for (order,) in stored] != plan.orders:
        raise IndexMismatch(
            f"index {name!r} has a table layout this simdb does not compute",
            "use the simdb version that built it, or create a new index and re-ingest",
        )
    return Index(name, plan, Features.parse(features), expected_rows)


def get_or_create(conn: Connection, name: str) -> Index:
    """The index NAME, created with default settings if it does not exist yet."""
    try:
        return get(conn, name)
    except IndexNotFound:
        try:
            return create(conn, name)
        except IndexExists:  # created by a concurrent process in the meantime
            return get(conn, name)


@dataclass(frozen=True)
class Summary:
    """One line of `simdb list`."""

    name: str
    rows: int
    max_distance: int
    blocks: int
    tables: int
    features: str


def list_indexes(conn: Connection) -> list[Summary]:
    names = [str(name) for (name,) in conn.execute("SELECT name FROM simdb._indexes ORDER BY name")]
    result = []
    for name in names:
        index = get(conn, name)
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(index.table)).fetchone()
        rows = count[0] if count else 0
        result.append(
            Summary(
                name,
                rows,
                index.plan.max_distance,
                index.plan.blocks,
                len(index.plan.tables),
                str(index.features),
            )
        )
    return result


def drop(conn: Connection, name: str) -> None:
    """Remove an index: its table, B-trees and catalog rows, in one transaction."""
    index = get(conn, name)
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE {}").format(index.table))
        conn.execute(sql.SQL("DROP FUNCTION {}").format(index.near_function))
        conn.execute(sql.SQL("DROP FUNCTION {}").format(index.pairs_function))
        clusters = sql.Identifier(SCHEMA, clusters_table(name))
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(clusters))
        conn.execute("DELETE FROM simdb._indexes WHERE name = %s", (name,))


def grant(conn: Connection, name: str, role: str, *, writer: bool = False) -> None:
    """Let `role` query index NAME (reader), or also write its rows (writer); nothing more.

    A reader gets USAGE on the schema and SELECT on the index, its clusters and the catalog;
    simdb's functions are executable by everyone, as PostgreSQL grants by default. A writer
    also gets INSERT, UPDATE and DELETE on the index's rows.
    """
    index = get(conn, name)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists is None:
        raise InvalidParameter(f"no role named {role!r}", f"create it first, e.g. CREATE ROLE {role} LOGIN")
    who = sql.Identifier(role)
    readable = [
        index.table,
        *[sql.Identifier(SCHEMA, t) for t in ("_indexes", "_tables", "_alembic_version")],
    ]
    if table_exists(conn, clusters_table(name)):
        readable.append(sql.Identifier(SCHEMA, clusters_table(name)))
    with conn.transaction():
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(SCHEMA), who))
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.SQL(", ").join(readable), who))
        if writer:
            conn.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON {} TO {}").format(index.table, who))
