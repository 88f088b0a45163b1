"""`simdb serve`: the web pages to look at near-duplicates before dropping them (simdb.serve)."""

from __future__ import annotations

import os

import click

from simdb.cli.common import dsn_option
from simdb.cli.settings import Settings
from simdb.db import connection
from simdb.errors import InvalidParameter

TOKEN_VARIABLE = "SIMDB_SERVE_TOKEN"  # noqa: S105 (the variable's name, not a token)


@click.command(name="serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port to listen on."
)
@click.option(
    "--token",
    metavar="TOKEN",
    help=f"Answer only requests carrying TOKEN (default: {TOKEN_VARIABLE}; on an address other than "
    "the loopback one a token is needed, and one is made up if none is given).",
)
@dsn_option
@click.pass_context
def serve_(ctx: click.Context, host: str, port: int, token: str | None) -> None:
    """Web pages over the indexes: clusters with what dedup would keep, two documents side by side,
    search by pasted text or file, pictures of the pairs; read-only (a reader role will do).

    Listens on 127.0.0.1 unless --host says otherwise; then it needs a token, and prints the URL
    to open with it. Needs the serve extra: pip install 'simdb-pg[serve]'.
    """
    try:
        import uvicorn

        from simdb import serve
    except ImportError as error:
        raise InvalidParameter(
            f"simdb serve needs the packages of its extra ({error.name} is missing)",
            "pip install 'simdb-pg[serve]'",
        ) from error
    token = serve.token_for(host, token or os.environ.get(TOKEN_VARIABLE))
    settings: Settings = ctx.find_object(Settings) or Settings(None)
    target = connection.resolve(settings.dsn)
    app = serve.create_app(target.dsn, token=token)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    click.echo(f"simdb serve: open {url} (Ctrl-C stops it)", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


COMMANDS = [serve_]
