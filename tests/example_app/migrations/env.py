"""The example application's Alembic environment (the cookbook's shared-connection pattern)."""

from __future__ import annotations

from alembic import context
from example_app.models import Base
from sqlalchemy import create_engine

from simdb.alembic.autogenerate import process_revision_directives, render_item
from simdb.sqlalchemy import include_object

connection = context.config.attributes.get("connection")
if connection is None:
    engine = create_engine(context.get_x_argument(as_dictionary=True)["url"])
    connection = engine.connect()
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    include_object=include_object,
    render_item=render_item,
    process_revision_directives=process_revision_directives,
)
with context.begin_transaction():
    context.run_migrations()
