"""The `simdb` command: parses options, calls one library function, prints the result.

One module per group of commands (admin, data, search, measure, server), each a thin layer over
the library. simdb's own errors become one line on stderr with a hint and exit status 1; usage
errors exit 2.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
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


# Which module of simdb.cli defines each command, and the command's summary for `simdb --help`:
# a command's module, and the library it calls, load only when it runs (`simdb query` does not
# import ingest's or attach's code, and `simdb --help` imports none of them). tests/faces/test_help.py
# checks both against each module's COMMANDS.
COMMANDS: dict[str, tuple[str, str]] = {
    "attach": ("admin", "Create index NAME over an existing table, then sync it."),
    "bench": (
        "measure",
        "Measure an index on a scratch copy and print the figures with the machine and sizes.",
    ),
    "calibrate": (
        "measure",
        "How well distance <= k finds your near-duplicates: precision and recall against exact Jaccard.",
    ),
    "clusters": (
        "search",
        "Group the near-duplicates of index NAME into clusters (connected components of the pairs).",
    ),
    "create": ("admin", 'Create index NAME, readable in SQL as simdb."NAME".'),
    "db": ("server", "The embedded PostgreSQL server (used when no DSN is given); data in SIMDB_HOME."),
    "dedup": (
        "search",
        "One representative per cluster of index NAME, and the keys to drop (action keep|drop).",
    ),
    "delete": ("data", "Remove the rows of KEYS from index NAME (in one transaction)."),
    "distribute": (
        "admin",
        "Make index NAME a Citus distributed table, rows included (run on the coordinator).",
    ),
    "drop": ("admin", "Drop index NAME and all its rows."),
    "export": ("search", "Every row of index NAME, by key: key, fingerprint or signature, size, extension."),
    "fingerprint": (
        "search",
        "Print the 64-bit fingerprint (one-bit MinHash, spec v3, unless --fingerprint-spec 2 for "
        "SimHash; --bits 128 for 128 bits) of a text, or its MinHash sketch (spec v3: the band keys for "
        "--threshold, then a 64-word check).",
    ),
    "grant": (
        "admin",
        "Let database roles query index NAME (--reader) or also write it (--writer), and nothing more.",
    ),
    "ingest": ("data", "Fingerprint files, folders, JSONL or CSV (or - for stdin) into index NAME."),
    "init": (
        "admin",
        "Create or migrate simdb's schema and compile its kernels (commands that write create the "
        "schema on first use, and the first command that fingerprints compiles the kernels).",
    ),
    "list": ("admin", "List the indexes with their row counts and parameters."),
    "pairs": ("search", "Every pair of near-duplicate rows of index NAME, each once (key_a < key_b)."),
    "plan": (
        "admin",
        "Compare the block designs for ROWS rows and distance K, and mark the one simdb would pick; "
        "with --workers, what a distributed index of ROWS rows would cost.",
    ),
    "prune": ("data", "Remove the rows of index NAME that were last seen more than DURATION ago."),
    "query": ("search", "Rows of index NAME near a document, fingerprint or stored key, nearest first."),
    "reindex": (
        "admin",
        "Move attached index NAME to the newest fingerprint spec, in place, while queries run.",
    ),
    "serve": (
        "serve",
        "Web pages over the indexes: clusters with what dedup would keep, two documents side by side, "
        "search by pasted text or file, pictures of the pairs; read-only (a reader role will do).",
    ),
    "status": (
        "admin",
        "How far attached index NAME is behind its table: rows queued, failed, the oldest's age (an "
        "index in your table's column: the rows with text and no fingerprint yet).",
    ),
    "sync": (
        "admin",
        "Bring attached index NAME up to date with its table: unchanged rows cost nothing.",
    ),
}
COMMAND_MODULES = {name: module for name, (module, _) in COMMANDS.items()}


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
        from COMMANDS: listing them loads none of their modules."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in self.list_commands(ctx)])

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
