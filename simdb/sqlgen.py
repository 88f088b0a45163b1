"""The static SQL of an index's exact queries (near, pairs), generated once from its block plan.

near: each permuted column's prefix index is probed for the query's prefix, and candidates are
verified with bit_count on the permuted value inside the index (Hamming distance does not change
under a permutation), so rows that fail are never read. The permuted query values are bit
expressions of the fingerprint parameter, so the whole query is one statement with two
parameters, planned once and cached by PostgreSQL.

pairs (Manku et al.'s batch mode): each permuted column is joined with itself on its prefix,
pairs are verified with bit_count on the permuted values, and pairs found by several tables are
kept once.
"""

from __future__ import annotations

from psycopg import sql

from simdb.blocks import BlockPlan, Table

SCHEMA = "simdb"
FINGERPRINT = sql.SQL("$1")
MAX_DISTANCE = sql.SQL("$2")
PAIRS_MAX_DISTANCE = sql.SQL("$1")  # the only parameter of the pairs statement


def table_column(number: int) -> str:
    """The permuted block column of table `number`: p0, p1, ..."""
    return f"p{number}"


def near_function(index_name: str) -> str:
    """Name of the per-index SQL function that runs the near query: NAME__near."""
    return f"{index_name}__near"


def clusters_table(index_name: str) -> str:
    """Name of the table that maps keys to cluster numbers: NAME__clusters."""
    return f"{index_name}__clusters"


def pairs_function(index_name: str) -> str:
    """Name of the per-index SQL function that lists all pairs: NAME__pairs."""
    return f"{index_name}__pairs"


def permuted(table: Table, fingerprint: sql.Composable) -> sql.Composable:
    """SQL expression of the table's permuted value of a bigint fingerprint."""
    parts = []
    for move in table.moves:
        if move.width >= 64:
            return fingerprint
        parts.append(
            sql.SQL("((({fp} >> {source}) & {mask}) << {target})").format(
                fp=fingerprint,
                source=sql.Literal(move.source),
                mask=sql.Literal((1 << move.width) - 1),
                target=sql.Literal(move.target),
            )
        )
    return sql.SQL("({})").format(sql.SQL(" | ").join(parts))


def prefix(table: Table, value: sql.Composable) -> sql.Composed:
    """The table's prefix of a permuted value: value >> (64 - prefix bits).

    Each table's B-tree is on exactly this expression of its column, so a probe is an
    equality and the batch self-join is a merge join of the index with itself.
    """
    return sql.SQL("{} >> {}").format(value, sql.Literal(table.shift))


def create_block_index(index_name: str, number: int, table: Table) -> sql.Composed:
    """B-tree on a permuted column's prefix, carrying the column and the row id.

    INCLUDE (column, id): a probe verifies candidates with bit_count on the indexed permuted
    value and returns the row id from the index itself (an index-only scan, no table rows read).
    """
    column = sql.Identifier(table_column(number))
    return sql.SQL("CREATE INDEX {name} ON {table} (({prefix})) INCLUDE ({column}, id)").format(
        name=sql.Identifier(f"{index_name}_{table_column(number)}"),
        table=sql.Identifier(SCHEMA, index_name),
        prefix=prefix(table, column),
        column=column,
    )


def near_statement(index_name: str, plan: BlockPlan) -> sql.Composed:
    """SELECT key, distance of the rows within $2 bits of fingerprint $1, nearest first."""
    table = sql.Identifier(SCHEMA, index_name)
    probes = []
    for number, entry in enumerate(plan.tables):
        column = sql.Identifier(table_column(number))
        value = permuted(entry, FINGERPRINT)
        probes.append(
            sql.SQL(
                "SELECT id FROM {table} WHERE {stored} = {wanted}"
                " AND bit_count(({column} # {value})::bit(64)) <= {k}"
            ).format(
                table=table,
                stored=prefix(entry, column),
                wanted=prefix(entry, value),
                column=column,
                value=value,
                k=MAX_DISTANCE,
            )
        )
    return sql.SQL(
        "SELECT r.key, bit_count((r.fingerprint # {fp})::bit(64))::integer AS distance"
        " FROM {table} AS r WHERE r.id IN ({probes}) ORDER BY 2, 1"
    ).format(fp=FINGERPRINT, table=table, probes=sql.SQL(" UNION ALL ").join(probes))


def pairs_statement(index_name: str, plan: BlockPlan) -> sql.Composed:
    """SELECT key_a, key_b, distance of every pair of rows within $1 bits, once (key_a < key_b)."""
    table = sql.Identifier(SCHEMA, index_name)
    joins = []
    for number, entry in enumerate(plan.tables):
        column = sql.Identifier(table_column(number))
        left, right = (sql.SQL("{}.{}").format(sql.Identifier(side), column) for side in "xy")
        joins.append(
            sql.SQL(
                "SELECT x.id AS a, y.id AS b FROM {table} AS x JOIN {table} AS y"
                " ON {left_prefix} = {right_prefix} AND x.id < y.id"
                " WHERE bit_count(({left} # {right})::bit(64)) <= {k}"
            ).format(
                table=table,
                left_prefix=prefix(entry, left),
                right_prefix=prefix(entry, right),
                left=left,
                right=right,
                k=PAIRS_MAX_DISTANCE,
            )
        )
    return sql.SQL(
        "SELECT least(a.key, b.key), greatest(a.key, b.key),"
        " bit_count((a.fingerprint # b.fingerprint)::bit(64))::integer"
        " FROM ({joins}) AS p JOIN {table} AS a ON a.id = p.a JOIN {table} AS b ON b.id = p.b"
    ).format(joins=sql.SQL(" UNION ").join(joins), table=table)


def create_function(name: str, arguments: str, returns: str, settings: str, body: str) -> sql.Composed:
    """CREATE FUNCTION simdb.<name>(arguments) RETURNS TABLE (returns) running the statement `body`.

    `arguments`, `returns` and `settings` are simdb's own fixed SQL text, never user input.
    """
    return sql.SQL(
        "CREATE FUNCTION {function}({arguments}) RETURNS TABLE ({returns}) LANGUAGE plpgsql STABLE"
        " {settings} AS {body}"
    ).format(
        function=sql.Identifier(SCHEMA, name),
        arguments=sql.SQL(arguments),
        returns=sql.SQL(returns),
        settings=sql.SQL(settings),
        body=sql.Literal(f"BEGIN RETURN QUERY {body}; END"),
    )


# Each self-join of the pairs statement is a merge join of an index with itself, already in order
# (and split across parallel workers where the server allows them); left to itself the planner
# hashes or sorts the whole table once per indexed column.
PAIRS_SETTINGS = "SET enable_hashjoin = off SET enable_sort = off"
# The probed keys are expressions of $1, and a custom plan would be made on each of the first
# calls; the generic plan is the same index-only probes, planned once per session.
NEAR_SETTINGS = "PARALLEL SAFE SET plan_cache_mode = force_generic_plan"


def create_pairs_function(index_name: str, body: str) -> sql.Composed:
    """CREATE FUNCTION simdb.NAME__pairs(max_distance) running `body`."""
    return create_function(
        pairs_function(index_name),
        "max_distance integer",
        "key_a text, key_b text, distance integer",
        PAIRS_SETTINGS,
        body,
    )


def create_near_function(index_name: str, body: str) -> sql.Composed:
    """CREATE FUNCTION simdb.NAME__near(fingerprint, max_distance) running `body` with a generic plan."""
    return create_function(
        near_function(index_name),
        "fingerprint bigint, max_distance integer",
        "key text, distance integer",
        NEAR_SETTINGS,
        body,
    )
