"""Near-duplicates in the articles' own column, which the application writes.

Revision ID: a0003
Revises: a0002
"""

import sqlalchemy as sa
from alembic import op

from simdb import alembic as simdb_ops
from simdb.index.modes import SimhashSpec

revision = "a0003"
down_revision = "a0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("articles", sa.Column("fp", sa.BigInteger))
    simdb_ops.attach_index(  # its B-trees are the model's simhash_indexes(Article.fp, "articles_fp")
        "articles_fp",
        table="public.articles",
        key_column="id",
        fingerprint_column="fp",
        spec=SimhashSpec(max_distance=3, blocks=4),
    )


def downgrade() -> None:
    simdb_ops.drop_index("articles_fp")
    op.drop_column("articles", "fp")
