"""The `simdb` command: parses options, calls one library function, prints the result.

One module per group of commands (admin, data, search, measure, server), each a thin layer over
the library. simdb's own errors become one line on stderr with a hint and exit status 1; usage
errors exit 2.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from simdb.cli import examples
from simdb.cli.settings import DSN_HELP, Settings
from simdb.errors import DatabaseUnavailable, SimdbError, during_interrupt

if TYPE_CHECKING:
    import psycopg

DISTRIBUTION = "simdb-pg"  # the name on the package index (pip install simdb-pg), as in pyproject.toml


class _ReaderGone(Exception):
    """Output went to a pipe whose reader has closed it (click would end such a command with 1)."""


# Which module of simdb.cli defines each command: a command's module, and the library it calls,
# load only when it runs (`simdb query` does not import ingest's or attach's code, and `simdb
# --help` imports none of them). tests/faces/test_help.py checks it against each module's COMMANDS.
COMMAND_MODULES = {
    "attach": "admin",
    "bench": "measure",
    "calibrate": "measure",
    "clusters": "search",
    "create": "admin",
    "db": "server",
    "dedup": "search",
    "delete": "data",
    "distribute": "admin",
    "drop": "admin",
    "export": "search",
    "fingerprint": "search",
    "grant": "admin",
    "ingest": "data",
    "init": "admin",
    "list": "admin",
    "load": "data",
    "pairs": "search",
    "plan": "admin",
    "prune": "data",
    "query": "search",
    "reindex": "admin",
    "serve": "serve",
    "status": "admin",
    "sync": "admin",
}


@functools.cache
def summaries() -> dict[str, str]:
    """Each command's summary for `simdb --help`, as click makes it from the command's docstring,
    read from the modules' source: listing the commands imports none of them."""
    found = {}
    for module in sorted(set(COMMAND_MODULES.values())):
        source = importlib.util.find_spec(f"simdb.cli.{module}")
        if source is None or source.origin is None:
            continue
        tree = ast.parse(Path(source.origin).read_text(encoding="utf-8"))
        for node in tree.body:
            name = _command_name(node) if isinstance(node, ast.FunctionDef) else None
            if name and isinstance(node, ast.FunctionDef):
                found[name] = click.Command(name, help=ast.get_docstring(node)).get_short_help_str(limit=1000)
    return found


def _command_name(function: ast.FunctionDef) -> str | None:
    """The name a @click.command or @click.group decorator gives `function`, if it has one."""
    for decorator in function.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else None
        if (
            isinstance(decorator, ast.Call)
            and isinstance(called, ast.Attribute)
            and isinstance(called.value, ast.Name)
            and (called.value.id, called.attr) in (("click", "command"), ("click", "group"))
        ):
            named = [word.value for word in decorator.keywords if word.arg == "name"]
            return str(named[0].value) if named and isinstance(named[0], ast.Constant) else function.name
    return None


@functools.cache
def module_commands(module: str) -> dict[str, click.Command]:
    """The commands of simdb.cli.`module`, each with its examples as the --help epilog."""
    commands: list[click.Command] = importlib.import_module(f"simdb.cli.{module}").COMMANDS
    for command in commands:
        command.epilog = examples.epilog(str(command.name))
        for sub in command.commands.values() if isinstance(command, click.Group) else ():
            sub.epilog = examples.epilog(f"{command.name} {sub.name}")
    return {str(command.name): command for command in commands}


def all_commands() -> dict[str, click.Command]:
    """Every command by name, each module loaded (for --help's list and the tests)."""
    return {name: module_commands(module)[name] for name, module in sorted(COMMAND_MODULES.items())}


class _Commands(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        return None if module is None else module_commands(module).get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command with its whole first sentence, wrapped (click would cut it at the width),
        from summaries(): listing them loads none of their modules."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, summaries()[name]) for name in self.list_commands(ctx)])

    def invoke(self, ctx: click.Context) -> object:
        # psycopg warns when a transaction it was leaving could not be rolled back (a Ctrl-C or a
        # lost connection mid-statement); the server rolls it back anyway, and run() says what
        # happened. (Here, not at import: `simdb --help` runs no command and loads no logging.)
        import logging

        logging.getLogger("psycopg").setLevel(logging.ERROR)
        try:
            return super().invoke(ctx)
        except BrokenPipeError as error:
            raise _ReaderGone from error


@click.group(
    cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.option(
    "--dsn",
    metavar="DSN",
    help=DSN_HELP + " Also accepted after the command.",
)
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def main(ctx: click.Context, dsn: str | None) -> None:
    """Near-duplicate search that lives in PostgreSQL.

    \b
    Quick start (no database needed; simdb starts its own):
      simdb create docs
      simdb ingest docs ./my-folder
      simdb query docs --file ./my-folder/a.txt
    """
    ctx.obj = Settings(dsn)


def run(args: list[str] | None = None) -> None:
    """Entry point: simdb's errors become one line with a hint, never a traceback."""
    try:
        try:
            main.main(args=args, prog_name="simdb", standalone_mode=False)
        except Exception as error:
            if during_interrupt(error):  # the Ctrl-C is what happened; report that
                raise KeyboardInterrupt from error
            raise
    except click.exceptions.Abort as aborted:
        if isinstance(aborted.__context__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
            click.echo(f"simdb: interrupted ({_RERUN})", err=True)
            sys.exit(130)
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except SimdbError as error:
        click.echo(f"simdb: error: {error}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo(f"simdb: interrupted ({_RERUN})", err=True)
        sys.exit(130)
    except _ReaderGone:  # the reader went away (`| head`): a normal end, and nothing more to print
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as error:
        message = _database_error(error)
        if message is None:
            raise
        click.echo(f"simdb: error: {message}", err=True)
        sys.exit(1)


_ROLLED_BACK = "the failed statement's transaction was rolled back; work committed before it is kept"
_RERUN = "batches already committed are kept; running the same command again completes the work"


def _database_error(error: Exception) -> str | None:
    """The line for an error of the database, or None for any other error. psycopg loads only
    with the commands that connect, so an error raised while it is not loaded is none of its own."""
    if "psycopg" not in sys.modules:
        return None
    import psycopg

    if isinstance(error, psycopg.OperationalError):
        return str(DatabaseUnavailable(_first_line(error), _RERUN))
    if not isinstance(error, psycopg.Error):
        return None
    if _connection_lost(error):
        return str(
            DatabaseUnavailable(f"the connection to the database was lost: {_first_line(error)}", _RERUN)
        )
    return f"the database refused: {_first_line(error)} ({_ROLLED_BACK})"


# What libpq says of a connection that dropped mid-statement, as a coordinator relays it for a
# worker: the server went away, or the TLS session under it ended.
_LIBPQ_DROPPED = ("server closed the connection unexpectedly", "SSL SYSCALL error", "could not receive data")


def _connection_lost(error: psycopg.Error) -> bool:
    """True when the server went away mid-statement rather than refusing it.

    libpq reports a dropped connection (a server that crashed or was stopped) as a result without
    an SQLSTATE; the server itself says so with class 08 or the shutdown codes 57P01 to 57P03; a
    Citus coordinator relays libpq's own words when a worker's connection dropped mid-statement.
    """
    import psycopg

    if any(words in str(error) for words in _LIBPQ_DROPPED):
        return True
    state = error.sqlstate
    if state is None:
        return isinstance(error, psycopg.DatabaseError) and not isinstance(error, psycopg.ProgrammingError)
    return state.startswith("08") or state in {"57P01", "57P02", "57P03"}


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


if __name__ == "__main__":
    run()
