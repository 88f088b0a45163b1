"""The one shape of simdb's SQL functions: a PL/pgSQL function returning a table."""

from __future__ import annotations

from psycopg import sql


def table_function(
    name: sql.Composable,
    arguments: str,
    returns: str,
    settings: str,
    body: str,
    guard: str = "",
    *,
    replace: bool = False,
) -> sql.Composed:
    """CREATE [OR REPLACE] FUNCTION name(arguments) RETURNS TABLE (returns) running the statement
    `body`, after the PL/pgSQL statements `guard` if any.

    PL/pgSQL, so that the statement is planned once per session (an SQL function that is not
    inlined is planned again on every call before PostgreSQL 18). `arguments`, `returns`,
    `settings` and `guard` are simdb's own fixed SQL text, never user input.
    """
    return sql.SQL(
        "CREATE {replace}FUNCTION {function}({arguments}) RETURNS TABLE ({returns})"
        " LANGUAGE plpgsql STABLE {settings} AS {body}"
    ).format(
        replace=sql.SQL("OR REPLACE " if replace else ""),
        function=name,
        arguments=sql.SQL(arguments),
        returns=sql.SQL(returns),
        settings=sql.SQL(settings),
        body=sql.Literal(f"BEGIN {guard}RETURN QUERY {body}; END"),
    )
