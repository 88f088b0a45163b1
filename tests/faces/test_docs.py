"""Every command is documented: it has a help text of its own, and the README shows it in use; the
generated references are current, and every module path that moved is in docs/upgrading.md."""

from __future__ import annotations

import importlib
import re
import sys

import click
import pytest
from support import Conn, all_docs, doc, simdb

from simdb.cli import all_commands, main, reference
from simdb.moved import MOVED

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


def test_every_moved_module_is_in_upgrading_and_imports_with_a_warning() -> None:
    """docs/upgrading.md lists each former module path with its new one, and each still imports
    as the module it became, warning with the new path."""
    page = doc("upgrading")
    for old, new in MOVED.items():
        assert f"| `{old}` | `{new}` |" in page
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
            former = importlib.import_module(old)
        current = importlib.import_module(new)
        shared = {name for name in vars(current) if not name.startswith("__")}
        assert shared and all(getattr(former, name) is getattr(current, name) for name in shared)
