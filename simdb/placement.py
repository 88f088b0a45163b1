"""Where an index's rows live: on this PostgreSQL server (Local), or in the shards of a Citus
cluster, split by key (Distributed).

The two differ in three things, and the rest of simdb asks only through this interface:
- how the index's functions are planned: locally once per session (a generic plan), on Citus
  for each call (Citus cannot plan a query over many shards with its parameters unbound);
- how all-pairs reads rows and then the pairs' rows: locally by row address (ctid), on Citus by
  key (addresses repeat from shard to shard);
- which statements need the rows on the coordinator first: self-joins on a prefix or a band key
  are not on the distribution column, so Citus will not push them down to the shards.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from psycopg import sql

from simdb import rowscan
from simdb.catalog import Read, Reads, run
from simdb.connection import Connection
from simdb.errors import InvalidParameter
from simdb.names import SCHEMA

CITUS = "citus"
DISTRIBUTION_COLUMN = "key"


class Placement(ABC):
    """Where an index's rows live, and what that means for its statements."""

    kind: ClassVar[str]
    # NAME__near's settings: whether PostgreSQL keeps one generic plan for every call
    near_settings: ClassVar[str]
    pairs_settings: ClassVar[str]
    # whether simdb.near may hold the index's near statement itself (it forces generic plans)
    inline_near: ClassVar[bool]

    @abstractmethod
    def describe(self) -> str:
        """A few words for `simdb list` and messages: how the rows are spread ('' on one server)."""

    def as_dict(self) -> dict[str, object]:
        return {"placement": self.kind}

    @abstractmethod
    def place(self, conn: Connection, table: sql.Identifier, *, beside: sql.Identifier | None = None) -> None:
        """Put a new, empty table where this placement keeps rows (beside another, for a table
        joined with it on key)."""

    @abstractmethod
    def read_rows(
        self, conn: Connection, table: sql.Identifier, expressions: list[sql.Composable]
    ) -> rowscan.Rows:
        """Every row's reference (what `pairs_of` finds it by) and its bigint expressions (over r)."""

    @abstractmethod
    def pairs_of(self, table: sql.Identifier, score: sql.Composable, keep: sql.Composable) -> sql.Composed:
        """SELECT least(a.key, b.key), greatest(a.key, b.key), score of the pairs of rows whose
        references are the two array parameters (rows a and b; `keep` may name s.score)."""

    @abstractmethod
    def self_joined(
        self, table: sql.Identifier, statement: Callable[[sql.Composable], sql.Composed]
    ) -> sql.Composed:
        """A statement whose self-joins read the table's rows (given the relation to read), made
        runnable where the rows live."""


@dataclass(frozen=True)
class Local(Placement):
    """Rows in one table on this server."""

    kind: ClassVar[str] = "local"
    # The probes compare index expressions with expressions of $1: the generic plan is the same
    # bitmap probes whatever the value, and a custom plan made on every call would cost more than
    # the query (at 20 tables, 0.7 ms of planning for a 0.3 ms query).
    near_settings: ClassVar[str] = "PARALLEL SAFE SET plan_cache_mode = force_generic_plan"
    pairs_settings: ClassVar[str] = ""
    inline_near: ClassVar[bool] = True

    def describe(self) -> str:
        return ""

    def place(self, conn: Connection, table: sql.Identifier, *, beside: sql.Identifier | None = None) -> None:
        """Nothing to do: a table is created where it lives."""

    def read_rows(
        self, conn: Connection, table: sql.Identifier, expressions: list[sql.Composable]
    ) -> rowscan.Rows:
        return rowscan.read(conn, table, expressions)

    def pairs_of(self, table: sql.Identifier, score: sql.Composable, keep: sql.Composable) -> sql.Composed:
        rows = sql.SQL(
            "unnest(%s::tid[], %s::tid[]) AS p(a, b) JOIN {table} AS a ON a.ctid = p.a"
            " JOIN {table} AS b ON b.ctid = p.b"
        ).format(table=table)
        return _scored(sql.SQL(""), rows, score, keep)

    def self_joined(
        self, table: sql.Identifier, statement: Callable[[sql.Composable], sql.Composed]
    ) -> sql.Composed:
        return statement(table)


@dataclass(frozen=True)
class Distributed(Placement):
    """Rows in a Citus distributed table, hash-split by key into `shards` shards: ingest goes to
    the key's shard, a probe runs on every shard at once."""

    shards: int | None = None  # None: 2 per worker when placing (see SHARDS_PER_WORKER)
    column: str = DISTRIBUTION_COLUMN  # another for an application's table (storage.column)

    kind: ClassVar[str] = "distributed"
    # Citus plans a query over many shards only with its parameters bound (a custom plan). A probe
    # is short: one connection per worker runs its shards in turn, where Citus would otherwise
    # open more for each query (with 4 clients on 32 shards: 117 queries/s against 30).
    near_settings: ClassVar[str] = (
        "SET plan_cache_mode = force_custom_plan SET citus.max_adaptive_executor_pool_size = 1"
    )
    pairs_settings: ClassVar[str] = "SET plan_cache_mode = force_custom_plan"
    inline_near: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.shards is not None and not 1 <= self.shards <= 64000:
            raise InvalidParameter(
                f"bad shard count {self.shards}", "use 1 to 64000 shards (by default, 2 per worker)"
            )

    def describe(self) -> str:
        by = f"distributed by {self.column}"
        return f"{by}, {self.shards} shards" if self.shards else by

    def as_dict(self) -> dict[str, object]:
        return {"placement": self.kind, "shards": self.shards, "distribution_column": self.column}

    def place(self, conn: Connection, table: sql.Identifier, *, beside: sql.Identifier | None = None) -> None:
        check_citus(conn)
        # One connection per worker for the rest of the transaction: the index's functions are
        # created after this, and Citus propagates them only over the connections it used here.
        conn.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        if beside is not None:
            options = sql.SQL("colocate_with => {}").format(sql.Literal(beside.as_string(conn)))
        else:
            options = sql.SQL("shard_count => {}").format(sql.Literal(self.shards or default_shards(conn)))
        conn.execute(
            sql.SQL("SELECT create_distributed_table({}, {}, {})").format(
                sql.Literal(table.as_string(conn)), sql.Literal(DISTRIBUTION_COLUMN), options
            )
        )

    def read_rows(
        self, conn: Connection, table: sql.Identifier, expressions: list[sql.Composable]
    ) -> rowscan.Rows:
        return rowscan.read_keyed(conn, table, expressions)

    def pairs_of(self, table: sql.Identifier, score: sql.Composable, keep: sql.Composable) -> sql.Composed:
        """The pairs' rows are read once, by key (one statement on each shard), then paired on the
        coordinator: a join of the table with itself on anything but key would not run on Citus."""
        read = sql.SQL(
            "WITH p AS MATERIALIZED (SELECT * FROM unnest(%s::text[], %s::text[]) AS p(a, b)),"
            " r AS MATERIALIZED (SELECT * FROM {table} WHERE key IN (SELECT a FROM p UNION SELECT b FROM p)) "
        ).format(table=table)
        return _scored(read, sql.SQL("p JOIN r AS a ON a.key = p.a JOIN r AS b ON b.key = p.b"), score, keep)

    def self_joined(
        self, table: sql.Identifier, statement: Callable[[sql.Composable], sql.Composed]
    ) -> sql.Composed:
        """The rows are gathered on the coordinator once, and the self-joins run there."""
        rows = sql.Identifier("_rows")
        return sql.SQL("WITH {rows} AS MATERIALIZED (SELECT * FROM {table}) {statement}").format(
            rows=rows, table=table, statement=statement(rows)
        )


def _scored(
    before: sql.Composable, rows: sql.Composable, score: sql.Composable, keep: sql.Composable
) -> sql.Composed:
    """SELECT least(a.key, b.key), greatest(a.key, b.key), score FROM `rows` (which name rows a
    and b) WHERE `keep`, after `before` (a WITH clause, or nothing)."""
    return sql.SQL(
        "{before}SELECT least(a.key, b.key), greatest(a.key, b.key), s.score FROM {rows}"
        " CROSS JOIN LATERAL (SELECT {score} AS score) AS s WHERE {keep}"
    ).format(before=before, rows=rows, score=score, keep=keep)


LOCAL = Local()
# A probe runs on every shard, a worker's shards one after another: measured with 2 workers at
# 1M rows, 4 shards answered in 1.6 ms and 32 (Citus' default) in 9.9 ms, at a sixth of the
# throughput. Two per worker leave room to move half of a worker's rows to a new one.
SHARDS_PER_WORKER = 2


def default_shards(conn: Connection) -> int:
    """The shards of a new distributed index: SHARDS_PER_WORKER per active worker."""
    row = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    return SHARDS_PER_WORKER * max(1, int(row[0]) if row else 1)


def has_citus(conn: Connection) -> bool:
    """Whether the Citus extension is installed in this database."""
    return conn.execute(HAS_CITUS, (CITUS,)).fetchone() is not None


def check_citus(conn: Connection) -> None:
    if not has_citus(conn):
        raise InvalidParameter(
            "this database has no Citus extension, so it cannot hold a distributed index",
            "connect to a Citus coordinator (CREATE EXTENSION citus; add workers with citus_add_node),"
            " or leave out --distributed",
        )


CitusTable = tuple[str, str, int]  # (method, distribution column, shards)
CITUS_TABLE = sql.SQL(
    "SELECT p.partmethod, column_to_column_name(p.logicalrelid, p.partkey),"
    " (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)"
    " FROM pg_dist_partition p WHERE p.logicalrelid = to_regclass(%s)"
)
HAS_CITUS = sql.SQL("SELECT 1 FROM pg_extension WHERE extname = %s")


def citus_table_reads(relation: str) -> Reads[CitusTable | None]:
    """citus_table as catalog reads (simdb.aio runs them too)."""
    if not (yield Read(HAS_CITUS, (CITUS,))):
        return None
    rows = yield Read(CITUS_TABLE, (relation,))
    return (str(rows[0][0]), str(rows[0][1]), int(rows[0][2])) if rows else None


def citus_table(conn: Connection, relation: str) -> CitusTable | None:
    """(method, distribution column, shards) of a Citus table (a regclass's text), or None."""
    return run(conn, citus_table_reads(relation))


def of_application_table(conn: Connection, relation: str) -> Placement:
    """The placement of an application's table that holds an index (storage.column): Local, or
    Distributed by its own column where Citus hash-distributes it; other Citus tables (reference,
    append) are refused."""
    return application_placement(citus_table(conn, relation), relation)


def application_placement(found: CitusTable | None, relation: str) -> Placement:
    """of_application_table from what Citus' metadata says of the table."""
    if found is None:
        return LOCAL
    method, column, shards = found
    if method != "h":
        raise InvalidParameter(
            f"table {relation} is a Citus table that is not hash-distributed (a reference table, or"
            " a local table added to Citus' metadata), whose rows simdb cannot read by address or by"
            " shard",
            "keep the index in a hash-distributed table (create_distributed_table) or a table Citus does"
            " not manage, or attach a side table with --no-triggers (each sync compares the whole table)",
        )
    return Distributed(shards, column)


def of(conn: Connection, table: str) -> Placement:
    """The placement of simdb.<table>, as Citus' metadata has it (Local without Citus)."""
    return own_placement(citus_table(conn, own_relation(table)), table)


def own_relation(table: str) -> str:
    """simdb.<table> as a regclass's text."""
    return f'{SCHEMA}."{table}"'


def own_placement(found: CitusTable | None, table: str) -> Placement:
    """`of` from what Citus' metadata says of simdb.<table>."""
    if found is None:
        return LOCAL
    method, column, shards = found
    if method != "h" or column != DISTRIBUTION_COLUMN:
        raise InvalidParameter(
            f"table {SCHEMA}.{table} is a Citus table that simdb did not make (not hash-distributed by key)",
            f"undistribute it (SELECT undistribute_table('{SCHEMA}.{table}')) and run `simdb distribute`",
        )
    return Distributed(shards)
