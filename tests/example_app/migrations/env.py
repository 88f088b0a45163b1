"""The example application's Alembic environment (the cookbook's shared-connection pattern)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

connection = context.config.attributes.get("connection")
if connection is None:
    engine = create_engine(context.get_x_argument(as_dictionary=True)["url"])
    connection = engine.connect()
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
