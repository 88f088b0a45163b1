"""The generated references: docs/cli-reference.md, every command's --help as simdb prints it
(`python -m simdb.cli.reference cli`), and docs/sql-reference.md, every public SQL function with
the COMMENT its migration gives it (`python -m simdb.cli.reference sql`, from a database simdb has
migrated). tests/faces/test_docs.py fails when either page differs from what these write."""

from __future__ import annotations

from collections.abc import Iterator

import click
from psycopg import sql

from simdb.cli import all_commands, main
from simdb.db.connection import Connection

WIDTH = 100  # the terminal's width the page assumes (simdb's own settings cap the help at 100)


def contexts(command: click.Command = main, parent: click.Context | None = None) -> Iterator[click.Context]:
    """A context for every command, as `simdb ... --help` makes it: the group's own first, then
    its commands by name, each under its group's (whose settings it inherits)."""
    if parent is None:
        context = click.Context(command, info_name="simdb", terminal_width=WIDTH, **command.context_settings)
    else:
        context = click.Context(command, info_name=command.name, parent=parent)
    yield context
    if isinstance(command, click.Group):
        found = all_commands() if command is main else command.commands
        for _, sub in sorted(found.items()):
            yield from contexts(sub, context)


def markdown() -> str:
    """The page: a heading and the --help of each command, in a code block."""
    parts = [
        "# CLI reference",
        "",
        "Every command's `--help`, as simdb prints it. Made by `python -m simdb.cli.reference cli >",
        "docs/cli-reference.md`; a test fails when it differs from the commands. How to use them:",
        "[From the command line](cli.md).",
    ]
    for context in contexts():
        parts += ["", f"## {context.command_path}", "", "```", context.get_help(), "```"]
    return "\n".join(parts) + "\n"


PUBLIC_FUNCTIONS = sql.SQL(
    "SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid),"
    " coalesce(obj_description(p.oid, 'pg_proc'), '') FROM pg_proc AS p"
    " WHERE p.pronamespace = {schema}::regnamespace AND p.proname NOT LIKE {private}"
    ' ORDER BY p.proname, pg_get_function_identity_arguments(p.oid) COLLATE "C"'
).format(schema=sql.Literal("simdb"), private=sql.Literal("\\_%"))


def sql_markdown(conn: Connection) -> str:
    """The SQL reference: each public function of schema simdb (not those whose name starts with
    an underscore), its arguments, what it returns and its COMMENT."""
    parts = [
        "# SQL reference",
        "",
        "Every public function of the schema `simdb`, with what `\\df+ simdb.*` says of it. Made by",
        "`python -m simdb.cli.reference sql > docs/sql-reference.md` from a migrated database; a test",
        "fails when it differs from the functions' comments. How to use them: [The SQL face](sql.md).",
    ]
    for name, arguments, result, comment in conn.execute(PUBLIC_FUNCTIONS):
        parts += ["", f"## simdb.{name}({arguments})", "", f"Returns `{result}`.", "", str(comment)]
    return "\n".join(parts) + "\n"


def _main(page: str) -> str:
    """The page `python -m simdb.cli.reference PAGE` prints: cli, or sql (from SIMDB_DSN, the
    PG* variables or the embedded server, migrated first)."""
    if page == "cli":
        return markdown()
    if page != "sql":
        raise click.UsageError(f"unknown page {page!r}: give cli or sql")
    from simdb import schema
    from simdb.db import connection

    with connection.connect(connection.resolve()) as conn:
        schema.ensure_schema(conn)
        return sql_markdown(conn)


if __name__ == "__main__":
    import sys

    click.echo(_main(sys.argv[1] if len(sys.argv) > 1 else "cli"), nl=False)
