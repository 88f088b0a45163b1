"""A write naming the sketch column keeps it; _sources counts rows without words.

An UPDATE that names the sketch column keeps its value, even the one the row had; _sources
records the rows with text and no words a fill found.

Each index in an application's table with a text column gets the trigger that marks such a
write (simdb_NAME_claim) and the clearing function that reads the mark: before, a write that set
the sketch to the value it had (an ORM saving every column) was taken for one that left it out,
and the sketch cleared. A table whose triggers the migrating role may not change is left as it
was, with a warning naming it and the fix (its owner drops the index and attaches it again).

_sources.wordless: a fill of an index in an application's column counts the rows whose text has
no words (they keep no sketch), so that `simdb status` does not count them as rows to fill; the
roles that may record a sync (UPDATE of synced_at) may record it too.

Revision ID: 0017
Revises: 0016
"""

import logging

import psycopg
from psycopg import sql

from simdb.db.sabridge import migration_connection
from simdb.index import catalog
from simdb.index import lifecycle as index

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute("ALTER TABLE simdb._sources ADD COLUMN wordless bigint")
    writers = raw.execute(
        "SELECT DISTINCT grantee FROM information_schema.column_privileges"
        " WHERE table_schema = 'simdb' AND table_name = '_sources' AND column_name = 'synced_at'"
        " AND privilege_type = 'UPDATE' AND grantee <> current_user AND grantee <> 'PUBLIC'"
    ).fetchall()
    for (role,) in writers:
        raw.execute(sql.SQL("GRANT UPDATE (wordless) ON simdb._sources TO {}").format(sql.Identifier(role)))
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
    """_sources.wordless goes; the marking trigger and the clearing function that reads its mark
    stay (they keep working with the schema before, and `simdb drop` removes both)."""
    raw = migration_connection()
    raw.execute("ALTER TABLE simdb._sources DROP COLUMN wordless")
