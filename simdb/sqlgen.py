"""The static SQL of an index's exact near query, generated once from its block plan.

Each permuted column is probed for the query's prefix range, and candidates are verified with
bit_count on the permuted value inside the index (Hamming distance does not change under a
permutation), so rows that fail are never read. The permuted query values are bit expressions
of the fingerprint parameter, so the whole query is one statement with two parameters, planned
once and cached by PostgreSQL.
"""

from __future__ import annotations

from psycopg import sql

from simdb.bits import MASK64, to_signed
from simdb.blocks import BlockPlan, Table

SCHEMA = "simdb"
FINGERPRINT = sql.SQL("$1")
MAX_DISTANCE = sql.SQL("$2")


def table_column(number: int) -> str:
    """The permuted block column of table `number`: p0, p1, ..."""
    return f"p{number}"


def near_function(index_name: str) -> str:
    """Name of the per-index SQL function that runs the near query: NAME__near."""
    return f"{index_name}__near"


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


def near_statement(index_name: str, plan: BlockPlan) -> sql.Composed:
    """SELECT key, distance of the rows within $2 bits of fingerprint $1, nearest first."""
    table = sql.Identifier(SCHEMA, index_name)
    probes = []
    for number, entry in enumerate(plan.tables):
        column = sql.Identifier(table_column(number))
        value = permuted(entry, FINGERPRINT)
        probes.append(
            sql.SQL(
                "SELECT id FROM {table} WHERE {column} BETWEEN {value} & {prefix} AND {value} | {suffix}"
                " AND bit_count(({column} # {value})::bit(64)) <= {k}"
            ).format(
                table=table,
                column=column,
                value=value,
                prefix=sql.Literal(to_signed(entry.prefix_mask)),
                suffix=sql.Literal(to_signed(~entry.prefix_mask & MASK64)),
                k=MAX_DISTANCE,
            )
        )
    return sql.SQL(
        "SELECT r.key, bit_count((r.fingerprint # {fp})::bit(64))::integer AS distance"
        " FROM {table} AS r WHERE r.id IN ({probes}) ORDER BY 2, 1"
    ).format(fp=FINGERPRINT, table=table, probes=sql.SQL(" UNION ALL ").join(probes))


def create_near_function(index_name: str, body: str) -> sql.Composed:
    """CREATE FUNCTION simdb.NAME__near(fingerprint, max_distance) running `body` with a generic plan.

    The range bounds are expressions of $1, so a custom plan would be re-made on every call;
    the generic plan is the same index-only probes, planned once per session.
    """
    return sql.SQL(
        "CREATE FUNCTION {function}(fingerprint bigint, max_distance integer)"
        " RETURNS TABLE (key text, distance integer)"
        " LANGUAGE plpgsql STABLE PARALLEL SAFE SET plan_cache_mode = force_generic_plan"
        " AS {body}"
    ).format(
        function=sql.Identifier(SCHEMA, near_function(index_name)),
        body=sql.Literal(f"BEGIN RETURN QUERY {body}; END"),
    )
