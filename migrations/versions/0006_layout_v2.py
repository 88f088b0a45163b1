"""Index layout v2: B-trees on expressions of the sketch, the key as primary key.

Each index's table keeps only its rows (the key as primary key, the sketch, size, hash, extension,
time); its B-trees are on expressions of the sketch, so nothing permuted and no band key is stored,
and there is no surrogate id (a distributed table can be split on key).

This revision is step 1 of simdb.index.v1_upgrade's move of every index (primary key, B-trees, functions);
schema.upgrade drops the old columns and rewrites each table once it has committed (step 2).
Grants on the tables, attached indexes' links to their sources and clusters tables are kept.

The downgrade leaves the tables in layout v2: the functions and catalog of earlier revisions
query them as they are (each index's near and pairs statements are stored with it).

Revision ID: 0006
Revises: 0005
"""

from simdb.db.resources import function_sql
from simdb.db.sabridge import migration_connection
from simdb.index import catalog, dispatch
from simdb.index import lifecycle as index
from simdb.index import v1_upgrade as layout

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    raw.execute(function_sql("_refused_sketch", 1))  # the near statements' check of a query sketch
    for name in catalog.index_names(raw):
        layout.prepare(raw, index.get(raw, name))
    dispatch.regenerate(raw)


def downgrade() -> None:
    """Nothing to undo: see the module's docstring."""
