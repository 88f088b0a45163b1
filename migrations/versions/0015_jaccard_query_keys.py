"""Jaccard near statements remade: the query's band keys in one array.

Each jaccard index's near statement and functions are made again: the query's band keys come
from one band's expression run per band (simdb.index.modes.jaccard.band_keys_array).

Revision ID: 0015
Revises: 0014
"""

from simdb.db.sabridge import migration_connection
from simdb.index import catalog
from simdb.index import lifecycle as index

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    raw = migration_connection()
    for name in catalog.index_names(raw):
        made = index.get(raw, name)
        if made.mode == "jaccard":
            index.remake_functions(raw, made)


def downgrade() -> None:
    """Nothing: the statements 0015 made read the same tables and B-trees as the ones before, and
    return the same rows."""
