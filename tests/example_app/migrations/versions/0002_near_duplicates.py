"""Near-duplicate search over articles, with simdb.

Revision ID: a0002
Revises: a0001
"""

from alembic import op

from simdb import alembic as simdb_ops

revision = "a0002"
down_revision = "a0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    simdb_ops.ensure_schema()
    simdb_ops.attach_index(
        "articles_dups", table="public.articles", key_column="id", text_column="body", expected_rows=100_000
    )
    op.create_index(
        "articles_title", "articles", ["title"]
    )  # the app's own operations still work after simdb's


def downgrade() -> None:
    op.drop_index("articles_title", "articles")
    simdb_ops.drop_index("articles_dups")
    simdb_ops.drop_schema()
