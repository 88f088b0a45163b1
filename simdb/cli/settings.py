"""What the `simdb` group passes to its commands: the --dsn given before or after the command.

Apart from simdb.cli.common so that `simdb --help` builds the group without loading the library."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Settings:
    dsn: str | None


DSN_HELP = (
    "PostgreSQL connection (URL or key=value). Default: SIMDB_DSN, DATABASE_URL, the PG* "
    "variables, else simdb's own embedded server."
)
