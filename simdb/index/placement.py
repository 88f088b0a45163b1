"""Where an index's rows live: on this PostgreSQL server (Local), or in the shards of a Citus
cluster, split by key (Distributed), or split by key with Manku's layout beside them (ByPrefix:
every row once per permuted table or band, in a probe table distributed by that table's prefix).

The two differ in three things, and the rest of simdb asks only through this interface:
- how the index's functions are planned: locally once per session (a generic plan), on Citus
  for each call (Citus cannot plan a query over many shards with its parameters unbound);
- how all-pairs reads rows and then the pairs' rows: locally by row address (ctid), on Citus by
  key (addresses repeat from shard to shard);
- where near and all pairs run: on one server through the B-trees of simdb."NAME"; by key, a
  probe on every shard and all pairs as joins that Citus runs on the workers (each permuted
  table's rows sent to every shard); by prefix, a probe on one shard per table and all pairs as
  co-located self-joins of the probe table, on the shards;
- what a write of rows also writes: by prefix, the rows' entries in the probe table.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter
from simdb.index import names, rowscan
from simdb.index.catalog import Read, Reads, run
from simdb.index.names import SCHEMA

if TYPE_CHECKING:
    from simdb.index.scheme import IndexSQL

CITUS = "citus"
DISTRIBUTION_COLUMN = "key"


class Placement(ABC):
    """Where an index's rows live, and what that means for its statements."""

    kind: ClassVar[str]
    distributed: ClassVar[bool] = True  # whether Citus spreads the rows over workers
    # NAME__near's settings: whether PostgreSQL keeps one generic plan for every call
    near_settings: ClassVar[str]
    pairs_settings: ClassVar[str]
    # whether simdb.near may hold the index's near statement itself (it forces generic plans)
    inline_near: ClassVar[bool]
    layout: ClassVar[str] = "key"  # how the rows are spread: by key, or by prefix (Manku's)
    # whether the B-trees on the sketch are on simdb."NAME" itself (by prefix: on the probe table)
    btrees_in_table: ClassVar[bool] = True
    # whether a first load may copy rows straight into simdb."NAME" and build the B-trees after
    bulk_writes: ClassVar[bool] = True
    # whether all pairs may read every row's sketch to the client and pair them there (simdb.plan.pairing)
    pairs_on_client: ClassVar[bool] = False
    # whether near may verify candidates in B-trees that carry the sketch (Index.covering), then
    # look up the rows of what it found by sketch: Citus cannot push that lookup down to shards
    index_only_near: ClassVar[bool] = False

    @abstractmethod
    def describe(self) -> str:
        """A few words for `simdb list` and messages: how the rows are spread ('' on one server)."""

    def as_dict(self) -> dict[str, object]:
        return {"placement": self.kind}

    @abstractmethod
    def place(self, conn: Connection, table: sql.Identifier, *, beside: sql.Identifier | None = None) -> None:
        """Put a new, empty table where this placement keeps rows (beside another, for a table
        joined with it on key)."""

    def read_rows(
        self, conn: Connection, table: sql.Identifier, expressions: list[sql.Composable]
    ) -> rowscan.Rows:
        """Every row's address and its bigint expressions (over r), for pairs on the client
        (only where pairs_on_client)."""
        return rowscan.read(conn, table, expressions)

    def read_column(
        self, conn: Connection, table: sql.Identifier, expression: sql.Composable, jobs: int = 1
    ) -> rowscan.Column:
        """Every row's address and its value of one bigint expression (over r), compactly, for
        pairs on the client (only where pairs_on_client); `jobs` connections read."""
        return rowscan.read_column(conn, table, expression, jobs=jobs)

    def pairs_of(self, table: sql.Identifier, score: sql.Composable, keep: sql.Composable) -> sql.Composed:
        """SELECT least(a.key, b.key), greatest(a.key, b.key), score of the pairs of rows whose
        addresses are the two array parameters (rows a and b; `keep` may name s.score)."""
        rows = sql.SQL(
            "unnest(%s::tid[], %s::tid[]) AS p(a, b) JOIN {table} AS a ON a.ctid = p.a"
            " JOIN {table} AS b ON b.ctid = p.b"
        ).format(table=table)
        return _scored(sql.SQL(""), rows, score, keep)

    def place_index(self, conn: Connection, index: IndexSQL) -> None:
        """Put a new index's table where this placement keeps rows, with what the placement
        derives from them (by prefix: the probe table, filled from the rows already there)."""
        self.place(conn, index.table)

    def derive(self, conn: Connection, index: IndexSQL) -> None:  # noqa: B027 (most derive nothing)
        """What the placement derives from the rows, for rows copied into simdb."NAME" directly
        (ingest.bulk_load); nothing by default."""

    def near_statement(self, index: IndexSQL, sketch: sql.Composable, cutoff: sql.Composable) -> sql.Composed:
        """SELECT key, score of the rows within `cutoff` of `sketch`, nearest first."""
        return index.table_near_statement(sketch, cutoff)

    @abstractmethod
    def pairs_statement(self, index: IndexSQL) -> sql.Composed:
        """SELECT key_a, key_b, score of every pair within cutoff $1, once (key_a < key_b)."""

    def upsert_writes(self, index: IndexSQL, stage: sql.Composable, upsert: sql.Composed) -> Writes:
        """The upsert of the rows in the temporary table `stage` into simdb."NAME", with what
        else it writes."""
        return Writes([], upsert, [])

    def delete_writes(self, index: IndexSQL, condition: sql.Composable) -> Writes:
        """DELETE FROM simdb."NAME" WHERE condition (over the table's columns), with what else it
        writes; the write's row count is the rows removed."""
        return Writes([], sql.SQL("DELETE FROM {} WHERE {}").format(index.table, condition), [])


@dataclass(frozen=True)
class Writes:
    """A write of an index's rows as its placement makes it: statements to run first, the write
    itself (whose row count or rows the caller reads), and statements to run after it."""

    before: list[sql.Composed]
    write: sql.Composed
    after: list[sql.Composed]

    def run(self, conn: Connection, parameters: Any = None) -> psycopg.Cursor[Any]:
        """Run them in the caller's transaction; the write's cursor."""
        for statement in self.before:
            conn.execute(statement)
        cursor = conn.execute(self.write, parameters)
        for statement in self.after:
            conn.execute(statement)
        return cursor


@dataclass(frozen=True)
class Local(Placement):
    """Rows in one table on this server."""

    kind: ClassVar[str] = "local"
    distributed: ClassVar[bool] = False
    # The probes compare index expressions with expressions of $1: the generic plan is the same
    # bitmap probes whatever the value, and a custom plan made on every call would cost more than
    # the query (at 20 tables, 0.7 ms of planning for a 0.3 ms query).
    near_settings: ClassVar[str] = "PARALLEL SAFE SET plan_cache_mode = force_generic_plan"
    pairs_settings: ClassVar[str] = ""
    inline_near: ClassVar[bool] = True
    index_only_near: ClassVar[bool] = True

    def describe(self) -> str:
        return ""

    def place(self, conn: Connection, table: sql.Identifier, *, beside: sql.Identifier | None = None) -> None:
        """Nothing to do: a table is created where it lives."""

    pairs_on_client: ClassVar[bool] = True  # several times faster than the pairs function

    def pairs_statement(self, index: IndexSQL) -> sql.Composed:
        return index.pairs_statement(index.table)


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

    def pairs_statement(self, index: IndexSQL) -> sql.Composed:
        """For each permuted table (or band), each row's prefix is sent to every shard, which
        joins it with its own rows through the B-tree on that prefix (Citus joins distributed
        tables only on their distribution column, so the prefix side is gathered first); a pair
        is kept by the first table whose prefixes it shares. The pairs are all that reaches the
        coordinator."""
        a, b = _sketch(index, "a"), _sketch(index, "b")
        r = _sketch(index, "r")
        score = index.score(a, b)
        joins = [
            sql.SQL(
                "SELECT a.key, b.key, {score}"
                " FROM (SELECT r.key, {sketch}, {prefix} AS prefix FROM {table} AS r) AS a"
                " JOIN {table} AS b ON a.prefix = {other}"
                " WHERE a.key < b.key AND {keeps} AND {first} = {number}"
            ).format(
                score=score,
                sketch=r,
                prefix=prefix,
                table=index.table,
                other=other,
                keeps=index.keeps(score, PAIRS_CUTOFF),
                first=first_shared(index, a, b),
                number=sql.Literal(number),
            )
            for number, (prefix, other) in enumerate(
                zip(index.btree_keys(r), index.btree_keys(b), strict=True)
            )
        ]
        return sql.SQL(" UNION ALL ").join(joins)


@dataclass(frozen=True)
class ByPrefix(Distributed):
    """Manku's layout on Citus: the rows in simdb."NAME", split by key as Distributed's, and
    every row once per permuted table (or band) in the probe table simdb."NAME__probes"
    (tableno, prefix, key, sketch), distributed by prefix: a probe of table i reaches the one
    shard of its prefix, and all pairs are the probe table joined with itself on the shards.
    simdb writes both in one transaction (Writes); a plain INSERT into simdb."NAME" would not
    reach the probe table."""

    layout: ClassVar[str] = "prefix"
    btrees_in_table: ClassVar[bool] = False
    bulk_writes: ClassVar[bool] = False

    def describe(self) -> str:
        by = "distributed by prefix (Manku's layout)"
        return f"{by}, {self.shards} shards" if self.shards else by

    def as_dict(self) -> dict[str, object]:
        return {**super().as_dict(), "layout": self.layout}

    def place_index(self, conn: Connection, index: IndexSQL) -> None:
        """simdb."NAME" split by key without B-trees on its sketch, and the probe table beside it,
        filled from the rows already there (on the workers: Citus moves each row to its prefix's
        shard) and then given its primary key."""
        self.place(conn, index.table)
        for column in index.columns:  # (those of a local index that is being distributed)
            conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(names.btree(index.name, column)))
        probes = names.probes_table(index.name)
        conn.execute(
            sql.SQL(
                "CREATE TABLE {probes} (tableno smallint NOT NULL, prefix bigint NOT NULL, key text NOT NULL,"
                " {sketch})"
            ).format(probes=probes, sketch=index.sketch_definition())
        )
        conn.execute(
            sql.SQL("SELECT create_distributed_table({}, 'prefix', shard_count => {})").format(
                sql.Literal(probes.as_string(conn)), sql.Literal(self.shards or default_shards(conn))
            )
        )
        self.derive(conn, index)
        conn.execute(
            sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY (prefix, tableno, key)").format(
                probes, sql.Identifier(names.probes_primary_key_name(index.name))
            )
        )

    def derive(self, conn: Connection, index: IndexSQL) -> None:
        """The probe entries of every row in simdb."NAME" (its rows were copied in directly)."""
        rows = sql.SQL("SELECT r.key, r.{} FROM {} AS r").format(
            sql.Identifier(index.sketch_column), index.table
        )
        conn.execute(_probe_rows(index, rows))

    def near_statement(self, index: IndexSQL, sketch: sql.Composable, cutoff: sql.Composable) -> sql.Composed:
        """Each table's entries under the query's prefix (Citus sends each to its one shard, the
        prefixes being constants in a custom plan), scored there; a row found by several tables
        is kept by the first."""
        p = _sketch(index, "p")
        score = index.score(p, sketch)
        return sql.SQL(
            "SELECT p.key, {score} FROM {probes} AS p WHERE ({probes_of}) AND {keeps} AND p.tableno = {first}"
            " AND {check} {order}"
        ).format(
            score=score,
            probes=names.probes_table(index.name),
            probes_of=sql.SQL(" OR ").join(
                sql.SQL("(p.prefix = {} AND p.tableno = {})").format(prefix, sql.Literal(number))
                for number, prefix in enumerate(index.btree_keys(sketch))
            ),
            keeps=index.keeps(score, cutoff),
            first=first_shared(index, p, sketch),
            check=index.sketch_check(sketch),
            order=index.nearest_first,
        )

    def pairs_statement(self, index: IndexSQL) -> sql.Composed:
        """The probe table joined with itself on (prefix, tableno): co-located, so each shard
        pairs its own entries; a pair is kept by the first table whose prefixes it shares."""
        a, b = _sketch(index, "a"), _sketch(index, "b")
        score = index.score(a, b)
        return sql.SQL(
            "SELECT a.key, b.key, {score} FROM {probes} AS a JOIN {probes} AS b"
            " ON a.prefix = b.prefix AND a.tableno = b.tableno"
            " WHERE a.key < b.key AND {keeps} AND a.tableno = {first}"
        ).format(
            score=score,
            probes=names.probes_table(index.name),
            keeps=index.keeps(score, PAIRS_CUTOFF),
            first=first_shared(index, a, b),
        )

    def upsert_writes(self, index: IndexSQL, stage: sql.Composable, upsert: sql.Composed) -> Writes:
        """The stored rows of the batch's keys are kept aside before the upsert; after it, the
        probe entries of those whose sketch changed are removed and the new sketches' added."""
        old, sketch = names.old_rows_table(index.name), sql.Identifier(index.sketch_column)
        kept = sql.SQL(
            "INSERT INTO {old} (key, {sketch}) SELECT m.key, m.{sketch} FROM {table} AS m"
            " WHERE m.key IN (SELECT s.key FROM {stage} AS s)"
        ).format(old=old, sketch=sketch, table=index.table, stage=stage)
        changed = sql.SQL(
            "SELECT o.key, o.{sketch} FROM {old} AS o JOIN {stage} AS s ON s.key = o.key"
            " WHERE s.{sketch} <> o.{sketch}"
        ).format(old=old, stage=stage, sketch=sketch)
        new = sql.SQL(
            "SELECT s.key, s.{sketch} FROM {stage} AS s LEFT JOIN {old} AS o ON o.key = s.key"
            " WHERE o.key IS NULL OR s.{sketch} <> o.{sketch}"
        ).format(old=old, stage=stage, sketch=sketch)
        return Writes(
            [*self._writing(index), kept], upsert, [_probes_removed(index, changed), _probe_rows(index, new)]
        )

    def delete_writes(self, index: IndexSQL, condition: sql.Composable) -> Writes:
        """The rows removed are kept aside (their keys and sketches), then their probe entries removed."""
        old, sketch = names.old_rows_table(index.name), sql.Identifier(index.sketch_column)
        write = sql.SQL(
            "WITH gone AS (DELETE FROM {table} WHERE {condition} RETURNING key, {sketch})"
            " INSERT INTO {old} (key, {sketch}) SELECT key, {sketch} FROM gone"
        ).format(table=index.table, condition=condition, sketch=sketch, old=old)
        gone = sql.SQL("SELECT o.key, o.{} FROM {} AS o").format(sketch, old)
        return Writes(self._writing(index), write, [_probes_removed(index, gone)])

    @staticmethod
    def _writing(index: IndexSQL) -> list[sql.Composed]:
        """The old rows' temporary table, and a lock that makes this index's writers take turns:
        two writes of one key would otherwise both remove the probe entries of the sketch before
        them and leave one of their own behind."""
        return [
            sql.SQL("CREATE TEMP TABLE IF NOT EXISTS {} (key text, {}) ON COMMIT DELETE ROWS").format(
                names.old_rows_table(index.name), index.sketch_definition()
            ),
            sql.SQL("SELECT pg_advisory_xact_lock(hashtext({}))").format(
                sql.Literal(f"simdb writes {index.name}")
            ),
        ]


PAIRS_CUTOFF = sql.SQL("$1")  # the only parameter of an index's pairs function


def first_shared(index: IndexSQL, a: sql.Composable, b: sql.Composable) -> sql.Composed:
    """The number of the first permuted table (or band) whose prefix two sketches share: of the
    tables that find a pair (or a row near a query), the one that keeps it."""
    return sql.SQL("CASE {} END").format(
        sql.SQL(" ").join(
            sql.SQL("WHEN {} = {} THEN {}").format(left, right, sql.Literal(number))
            for number, (left, right) in enumerate(zip(index.btree_keys(a), index.btree_keys(b), strict=True))
        )
    )


def _entries(index: IndexSQL, rows: sql.Composable) -> sql.Composed:
    """(tableno, prefix, key, sketch): each of `rows` (SELECT key, sketch) once per table."""
    r = _sketch(index, "r")
    return sql.SQL(
        "SELECT t.tableno, t.prefix, r.key, {r} FROM ({rows}) AS r({sketch_name}),"
        " LATERAL (VALUES {values}) AS t(tableno, prefix)"
    ).format(
        r=r,
        rows=rows,
        sketch_name=sql.SQL("key, {}").format(sql.Identifier(index.sketch_column)),
        values=sql.SQL(", ").join(
            sql.SQL("({}::smallint, {})").format(sql.Literal(number), prefix)
            for number, prefix in enumerate(index.btree_keys(r))
        ),
    )


def _probe_rows(index: IndexSQL, rows: sql.Composable) -> sql.Composed:
    """INSERT the probe entries of `rows` (SELECT key, sketch)."""
    return sql.SQL("INSERT INTO {} (tableno, prefix, key, {}) {}").format(
        names.probes_table(index.name), sql.Identifier(index.sketch_column), _entries(index, rows)
    )


def _probes_removed(index: IndexSQL, rows: sql.Composable) -> sql.Composed:
    """DELETE the probe entries of `rows` (SELECT key, sketch, as they were stored)."""
    return sql.SQL(
        "DELETE FROM {} WHERE (prefix, tableno, key) IN (SELECT e.prefix, e.tableno, e.key FROM ({}) AS e)"
    ).format(names.probes_table(index.name), _entries(index, rows))


def _sketch(index: IndexSQL, alias: str) -> sql.Composed:
    """alias.<the index's sketch column>."""
    return sql.SQL("{}.{}").format(sql.Identifier(alias), sql.Identifier(index.sketch_column))


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
LAYOUTS: dict[str, type[Distributed]] = {placed.layout: placed for placed in (Distributed, ByPrefix)}
DEFAULT_LAYOUT = Distributed.layout
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


CitusTable = tuple[str, str, int, bool]  # (method, distribution column, shards, has a probe table)
CITUS_TABLE = sql.SQL(
    "SELECT p.partmethod, column_to_column_name(p.logicalrelid, p.partkey),"
    " (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid),"
    " EXISTS (SELECT FROM pg_dist_partition q WHERE q.logicalrelid = to_regclass(%s))"
    " FROM pg_dist_partition p WHERE p.logicalrelid = to_regclass(%s)"
)
HAS_CITUS = sql.SQL("SELECT 1 FROM pg_extension WHERE extname = %s")


def citus_table_reads(relation: str, index: str | None = None) -> Reads[CitusTable | None]:
    """citus_table as catalog reads (simdb.aio runs them too)."""
    if not (yield Read(HAS_CITUS, (CITUS,))):
        return None
    probes = names.probes_table_name(index) if index else None
    rows = yield Read(CITUS_TABLE, (probes, relation))
    return (str(rows[0][0]), str(rows[0][1]), int(rows[0][2]), bool(rows[0][3])) if rows else None


def citus_table(conn: Connection, relation: str, index: str | None = None) -> CitusTable | None:
    """(method, distribution column, shards, whether index NAME has a probe table) of a Citus
    table (a regclass's text), or None."""
    return run(conn, citus_table_reads(relation, index))


def of_application_table(conn: Connection, relation: str) -> Placement:
    """The placement of an application's table that holds an index (storage.column): Local, or
    Distributed by its own column where Citus hash-distributes it; other Citus tables (reference,
    append) are refused."""
    return application_placement(citus_table(conn, relation), relation)


def application_placement(found: CitusTable | None, relation: str) -> Placement:
    """of_application_table from what Citus' metadata says of the table."""
    if found is None:
        return LOCAL
    method, column, shards, _ = found
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
    return own_placement(citus_table(conn, own_relation(table), table), table)


def own_relation(table: str) -> str:
    """simdb.<table> as a regclass's text."""
    return f'{SCHEMA}."{table}"'


def own_placement(found: CitusTable | None, table: str) -> Placement:
    """`of` from what Citus' metadata says of simdb.<table>."""
    if found is None:
        return LOCAL
    method, column, shards, probed = found
    if method != "h" or column != DISTRIBUTION_COLUMN:
        raise InvalidParameter(
            f"table {SCHEMA}.{table} is a Citus table that simdb did not make (not hash-distributed by key)",
            f"undistribute it (SELECT undistribute_table('{SCHEMA}.{table}')) and run `simdb distribute`",
        )
    return ByPrefix(shards) if probed else Distributed(shards)
