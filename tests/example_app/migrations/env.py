"""The example application's Alembic environment (the cookbook's shared-connection pattern)."""

from __future__ import annotations

from alembic import context
from example_app.models import Base
from sqlalchemy import create_engine

from simdb.sqlalchemy import include_object

connection = context.config.attributes.get("connection")
if connection is None:
    engine = create_engine(context.get_x_argument(as_dictionary=True)["url"])
    connection = engine.connect()
context.configure(connection=connection, target_metadata=Base.metadata, include_object=include_object)
with context.begin_transaction():
    context.run_migrations()
