"""An UPDATE that names the sketch column keeps its value, even the one the row had.

Each index in an application's table with a text column gets the trigger that marks such a
write (simdb_NAME_claim) and the clearing function that reads the mark: before, a write that set
the sketch to the value it had (an ORM saving every column) was taken for one that left it out,
and the sketch cleared. A table whose triggers the migrating role may not change is left as it
was, with a warning naming it and the fix (its owner drops the index and attaches it again).

Revision ID: attachA1
Revises: 0015
"""

import logging

import psycopg
from alembic import op

from simdb import catalog, index

revision = "attachA1"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = op.get_bind().connection.driver_connection
    for name in catalog.index_names(raw):
        made = index.get(raw, name)
        try:
            with raw.transaction():
                made.storage.renew(raw, made)
        except psycopg.errors.InsufficientPrivilege as error:
            logging.getLogger("alembic.runtime.migration").warning(
                "index %s keeps its old clearing trigger (%s): a write naming its sketch column with"
                " the value it had still clears it; as the table's owner, drop the index and attach it"
                " again",
                name,
                str(error).splitlines()[0],
            )


def downgrade() -> None:
    """Nothing: the marking trigger and the clearing function that reads its mark keep working
    with the schema before, and `simdb drop` removes both."""
