"""The embedded PostgreSQL server: simdb db status, start, stop, url."""

from __future__ import annotations

import click

from simdb.cli.common import json_option, show
from simdb.db import embedded


@click.group()
def db() -> None:
    """The embedded PostgreSQL server (used when no DSN is given); data in SIMDB_HOME."""


@db.command()
@json_option
def status(as_json: bool) -> None:
    """Say whether the embedded server runs, where, and its URL."""
    show(embedded.EmbeddedServer().status(), as_json)


@db.command()
def start() -> None:
    """Start the embedded server (initialising it on first use) and print its URL."""
    click.echo(embedded.EmbeddedServer().start())


@db.command()
def stop() -> None:
    """Stop the embedded server."""
    stopped = embedded.EmbeddedServer().stop()
    click.echo("stopped" if stopped else "was not running")


@db.command()
def url() -> None:
    """Print the embedded server's URL (for psql or your application)."""
    click.echo(embedded.EmbeddedServer().url())


COMMANDS = [db]
