"""The application's tables as simdb reads them: names, columns and their types, keys, and the
--where condition an index may put on their rows (checked before anything is created)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import psycopg
from psycopg import sql

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter
from simdb.index.catalog import SourceRow


def check_condition(condition: str) -> None:
    """Refuse a --where condition that could reach outside its parentheses in simdb's statements.

    Quoted strings, quoted names, dollar quotes and /* comments */ are skipped; outside them the
    parentheses must balance, and `;` or a `--` comment (which would swallow what follows) are refused.
    """
    depth, at = 0, 0
    while at < len(condition):
        char, pair = condition[at], condition[at : at + 2]
        if char in "'\"":
            escapes = char == "'" and at > 0 and condition[at - 1] in "eE"
            at = _closing_quote(condition, at, char, escapes)
            if at == len(condition):
                raise _bad_condition(condition, f"a {char} quote in it is not closed")
        elif char == "$" and (tag := re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", condition[at:])):
            end = condition.find(tag.group(0), at + len(tag.group(0)))
            if end < 0:
                raise _bad_condition(condition, f"its dollar quote {tag.group(0)} is not closed")
            at = end + len(tag.group(0)) - 1
        elif pair == "/*":
            at = _comment_end(condition, at)
            if at == len(condition):
                raise _bad_condition(condition, "a /* comment in it is not closed")
        elif pair == "--" or char == ";":
            raise _bad_condition(condition, f"{pair if pair == '--' else char!r} is not allowed in it")
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise _bad_condition(condition, "it closes a parenthesis it did not open")
        at += 1
    if depth:
        raise _bad_condition(condition, "it leaves a parenthesis open")


def _closing_quote(text: str, start: int, quote: str, escapes: bool) -> int:
    """Index of the quote closing the one at `start` (a doubled quote stays inside), or the end."""
    at = start + 1
    while at < len(text):
        if escapes and text[at] == "\\":
            at += 2
            continue
        if text[at] == quote:
            if text[at + 1 : at + 2] != quote:
                return at
            at += 1
        at += 1
    return len(text)


def _comment_end(text: str, start: int) -> int:
    """Index of the last character of the (nestable) block comment opening at `start`."""
    depth, at = 0, start
    while at < len(text):
        if text.startswith("/*", at):
            depth, at = depth + 1, at + 2
        elif text.startswith("*/", at):
            depth, at = depth - 1, at + 2
            if depth == 0:
                return at - 1
        else:
            at += 1
    return len(text)


def _bad_condition(condition: str, why: str) -> InvalidParameter:
    return InvalidParameter(
        f"the --where condition {condition!r} is refused: {why}",
        "give one SQL condition over the table's columns, e.g. \"published AND lang = 'en'\"",
    )


# The functions a stored expression calls, as its node tree names them: a function call's funcid,
# an operator's opfuncid (also of DISTINCT, NULLIF and `op ANY (array)`).
_CALLED = r":(?:funcid|opfuncid) (\d+)"


def check_row_alone(conn: Connection, source: SourceRow, label: str) -> None:
    """Refuse a --where condition that looks beyond the row (a subquery, an aggregate, another
    table) or calls a volatile function (pg_sleep, set_config, random, nextval: it may answer
    otherwise for the same row, or change something at each sync): PostgreSQL decides, as it does
    for a CHECK constraint, on an empty temporary copy of the table's columns (the user's table is
    neither locked nor changed), and the constraint's expression names the functions it calls."""
    probe = sql.Identifier(source.table)  # (the copy has the table's name: `articles.lang` still works)
    try:
        with conn.transaction() as transaction:
            conn.execute(
                sql.SQL("CREATE TEMP TABLE {} (LIKE {})").format(
                    probe, sql.Identifier(source.schema, source.table)
                )
            )
            conn.execute(
                sql.SQL("ALTER TABLE pg_temp.{} ADD CHECK ({})").format(
                    probe, sql.SQL(source.condition or "")
                )
            )
            volatile = conn.execute(
                "SELECT p.proname::text FROM pg_catalog.pg_constraint AS c"
                " CROSS JOIN LATERAL regexp_matches(c.conbin::text, %s, 'g') AS called (id)"
                " JOIN pg_catalog.pg_proc AS p ON p.oid = called.id[1]::oid"
                " WHERE c.conrelid = %s::regclass AND c.contype = 'c' AND p.provolatile = 'v'"
                " ORDER BY position(p.proname IN pg_get_constraintdef(c.oid)), 1 LIMIT 1",
                (_CALLED, sql.Identifier("pg_temp", source.table).as_string(conn)),
            ).fetchone()
            if volatile is not None:
                raise InvalidParameter(
                    f"the --where condition {source.condition!r} calls {volatile[0]}(), which is"
                    " volatile: it may answer otherwise for the same row, or change something",
                    "use the row's columns and immutable or stable functions, e.g. \"published AND lang"
                    " = 'en'\"; a function of your own may be declared STABLE",
                )
            raise psycopg.Rollback(transaction)
    except psycopg.Error as error:
        reason = str(error).splitlines()[0].replace(" in check constraint", "")
        raise InvalidParameter(
            f"the --where condition {source.condition!r} must look at one row of {label} alone: {reason}",
            "use the table's own columns, e.g. \"published AND lang = 'en'\"",
        ) from error


def parse_table(text: str) -> tuple[str, str]:
    """'schema.table' or 'table' (schema public) -> (schema, table)."""
    schema, dot, table = text.partition(".")
    if not dot:
        schema, table = "public", text
    if not schema or not table or "." in table:
        raise InvalidParameter(f"bad table name {text!r}", "write SCHEMA.TABLE, e.g. public.articles")
    return schema, table


def column_type(
    conn: Connection, source: SourceRow, column: str, option: str = "--key-column and --text-column"
) -> tuple[str, str]:
    """The column's SQL type and its type category ('S' for the string types); `option`: the
    options a missing column may have come from, for the hint."""
    row = conn.execute(
        "SELECT format_type(a.atttypid, a.atttypmod), t.typcategory FROM pg_attribute AS a"
        " JOIN pg_type AS t ON t.oid = a.atttypid"
        " JOIN pg_class AS c ON c.oid = a.attrelid JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = %s AND a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped",
        (source.schema, source.table, column),
    ).fetchone()
    if row is None:
        raise InvalidParameter(
            f"table {source.schema}.{source.table} has no column {column!r}",
            f"check {option}",
        )
    return str(row[0]), str(row[1])


def key_type(conn: Connection, source: SourceRow) -> str:
    """The SQL type of the table's key column (what a key kept as text is cast back to)."""
    return column_type(conn, source, source.key_column)[0]


@dataclass(frozen=True)
class KeyFacts:
    """What a sync needs to know of a table's key column, read in one statement."""

    type: str  # its SQL type: what a key kept as text is cast back to
    unique: bool  # a primary key, or a unique constraint on it alone
    has_btree: bool  # a B-tree leads with it, whole and in its own collation: keyset pages read only theirs
    md5_here: bool  # the MD5 of a text computed here is the server's (md5_here)


def key_facts(conn: Connection, source: SourceRow) -> KeyFacts:
    """The key column's type, whether it is unique, and whether a B-tree leads with it."""
    row = conn.execute(
        "SELECT format_type(a.atttypid, a.atttypmod),"
        " EXISTS (SELECT FROM pg_constraint AS k WHERE k.conrelid = c.oid AND k.contype IN ('p', 'u')"
        " AND k.conkey = ARRAY[a.attnum]),"
        " EXISTS (SELECT FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid"
        " JOIN pg_am AS am ON am.oid = i.relam WHERE x.indrelid = c.oid AND x.indkey[0] = a.attnum"
        " AND am.amname = 'btree' AND x.indpred IS NULL AND x.indcollation[0] = a.attcollation"
        " AND x.indisvalid)"
        " FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = %s AND a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped",
        (source.schema, source.table, source.key_column),
    ).fetchone()
    if row is None:
        raise InvalidParameter(
            f"table {source.schema}.{source.table} has no column {source.key_column!r}", "check --key-column"
        )
    return KeyFacts(str(row[0]), bool(row[1]), bool(row[2]), md5_here(conn))


def key_is_unique(conn: Connection, source: SourceRow) -> bool:
    """Whether the key column alone is a primary key or has a unique constraint."""
    return key_facts(conn, source).unique


def require_table(conn: Connection, source: SourceRow) -> None:
    """Refuse a table that is not there (or is not a plain table: a view has no rows to index)."""
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s", (source.schema, source.table)
    ).fetchone()
    if found is None:
        raise InvalidParameter(f"no table {source.schema}.{source.table}", "check --table (SCHEMA.TABLE)")


def require_text(conn: Connection, source: SourceRow) -> None:
    """Refuse a --text-column that is not of a string type."""
    text_type, category = column_type(conn, source, source.text_column)
    label = f"{source.schema}.{source.table}"
    if category != "S":
        raise InvalidParameter(
            f"--text-column {source.text_column!r} of {label} is {text_type}, not text",
            "give a text or varchar column (a view can cast another type with ::text)",
        )


def md5_here(conn: Connection) -> bool:
    """Whether the MD5 of a text's UTF-8 computed here is the server's md5(text): the database
    encoding is UTF-8. A fill then hashes the texts it reads itself, and the server only sends them."""
    return conn.info.parameter_status("server_encoding") == "UTF8"


def text_md5(text: str) -> bytes:
    """md5(text) as a UTF-8 database computes it."""
    return hashlib.md5(text.encode("utf-8"), usedforsecurity=False).digest()
