"""Alembic environment for simdb's own schema.

simdb runs it programmatically on the caller's connection (Alembic cookbook: sharing a
connection), passed in `config.attributes["connection"]`; `alembic -x url=...` works as well.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.schema import CreateSchema

from simdb.index.names import INTERNAL_SCHEMA, SCHEMA, VERSION_TABLE

# One lock id for every simdb process: concurrent first runs migrate once, one after another.
MIGRATION_LOCK = 0x51D8_0001


def run(connection: Connection) -> None:
    connection.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": MIGRATION_LOCK})
    # Both schemas before any revision: the index functions that revisions make with today's code
    # (0006 moves indexes to layout v2) go to simdb_internal even before 0011 moves the rest there.
    for schema in (SCHEMA, INTERNAL_SCHEMA):
        connection.execute(CreateSchema(schema, if_not_exists=True))
    context.configure(
        connection=connection,
        target_metadata=None,
        version_table=VERSION_TABLE,
        version_table_schema=SCHEMA,
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def write_script() -> None:
    """Offline mode (--sql, or inside a user's migration that writes a script): the statements go
    to the script, in the caller's transaction when it has one."""
    nested = bool(context.config.attributes.get("nested"))
    context.configure(
        dialect_name="postgresql",
        version_table=VERSION_TABLE,
        version_table_schema=SCHEMA,
        transactional_ddl=not nested,
    )
    with context.begin_transaction():
        context.execute(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        for schema in (SCHEMA, INTERNAL_SCHEMA):
            context.execute(CreateSchema(schema, if_not_exists=True))
        context.run_migrations()


shared = context.config.attributes.get("connection")
if context.is_offline_mode():
    write_script()
elif shared is not None:
    run(shared)
else:
    url = context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit("pass a database URL: alembic -x url=postgresql+psycopg://... upgrade head")
    with create_engine(url).begin() as connection:
        run(connection)
