"""Every command is documented: it has a help text of its own, and the README shows it in use."""

from __future__ import annotations

import re

import click
import pytest
from support import Conn, all_docs, doc, simdb

from simdb.cli import all_commands, main, reference

README = all_docs()  # README.md and docs/*.md


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command below `group`, subcommands of nested groups included."""
    found = []
    commands = all_commands() if group is main else group.commands
    for name, command in sorted(commands.items()):
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


COMMANDS = _commands(main)


def test_the_command_list_is_complete() -> None:
    assert len(COMMANDS) >= 22 and ("init",) in COMMANDS and ("db", "status") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_command_has_help(capsys: pytest.CaptureFixture[str], path: tuple[str, ...]) -> None:
    code, out, _ = simdb(capsys, *path, "--help")
    assert code == 0 and out.startswith(f"Usage: simdb {' '.join(path)}")
    summary = out.split("\n\n")[1].strip()
    assert len(summary) > 10, f"simdb {' '.join(path)} has no help text of its own"


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_command_appears_in_the_readme(path: tuple[str, ...]) -> None:
    used = re.compile(rf"\bsimdb {re.escape(' '.join(path))}(?![\w-])")
    assert used.search(README), f"the README never shows `simdb {' '.join(path)}`"


def test_the_cli_reference_is_what_the_commands_print() -> None:
    assert doc("cli-reference") == reference.markdown(), (
        "docs/cli-reference.md is stale: run python -m simdb.cli.reference cli > docs/cli-reference.md"
    )


def test_the_sql_reference_is_what_the_functions_say(conn: Conn) -> None:
    """On a freshly migrated database: every public function's arguments, result and COMMENT."""
    assert doc("sql-reference") == reference.sql_markdown(conn), (
        "docs/sql-reference.md is stale: run python -m simdb.cli.reference sql > docs/sql-reference.md"
    )
