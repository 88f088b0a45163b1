"""A migration that Alembic's autogenerate writes for simdb's column types and declared B-trees
runs as written (env.py with simdb.alembic.autogenerate's render_item and process_revision_directives)."""

from __future__ import annotations

import shutil
from pathlib import Path

import alembic
import psycopg
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from example_app.models import Base
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool
from support import TESTS

from simdb.index import catalog
from simdb.sqlalchemy import include_object

APP = TESTS / "example_app"
GENERIC_TEMPLATE = Path(alembic.__file__).parent / "templates" / "generic" / "script.py.mako"


def _run(dsn: str, script_location: Path, action: str, *args: object, **options: object) -> None:
    config = Config()
    config.set_main_option("script_location", str(script_location))
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, action)(config, *args, **options)
    engine.dispose()


def _btrees(dsn: str, name: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE %s ORDER BY 1", (f"simdb_{name}_%",)
        )
        return [row[0] for row in rows]


def _generated(versions: Path, rev_id: str) -> str:
    (written,) = versions.glob(f"{rev_id}_*.py")
    return written.read_text()


def test_autogenerate_writes_attach_index_and_the_types_import(empty_db: str, tmp_path: Path) -> None:
    """The example app before its a0003: the model's fp column and simhash_indexes(Article.fp)."""
    project = tmp_path / "migrations"
    shutil.copytree(APP / "migrations", project)
    shutil.copy(GENERIC_TEMPLATE, project)
    (project / "versions" / "0003_fingerprint_column.py").unlink()
    _run(empty_db, project, "upgrade", "head")
    _run(empty_db, project, "revision", "fingerprint column", autogenerate=True, rev_id="g0003")

    written = _generated(project / "versions", "g0003")
    assert "import simdb.sqlalchemy\n" in written
    assert "from simdb import alembic as simdb_ops\n" in written
    assert "from simdb.index.modes import SimhashSpec\n" in written
    assert (
        "    op.add_column('articles', sa.Column('fp', simdb.sqlalchemy.Fingerprint(max_distance=3, blocks=4),"
        " nullable=True))\n"
        "    simdb_ops.attach_index('articles_fp', table='public.articles', key_column='id',"
        " fingerprint_column='fp', spec=SimhashSpec(max_distance=3, blocks=4))\n"
    ) in written
    assert "op.create_index" not in written and "op.drop_index" not in written
    assert "    simdb_ops.drop_index('articles_fp')\n    op.drop_column('articles', 'fp')\n" in written

    _run(empty_db, project, "upgrade", "head")  # as generated
    with psycopg.connect(empty_db) as conn:
        assert catalog.index_names(conn) == ["articles_dups", "articles_fp"]
    assert _btrees(empty_db, "articles_fp") == [
        "simdb_articles_fp_key",
        "simdb_articles_fp_p0",
        "simdb_articles_fp_p1",
        "simdb_articles_fp_p2",
        "simdb_articles_fp_p3",
    ]
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(empty_db), poolclass=NullPool
    )
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": include_object})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()

    _run(empty_db, project, "downgrade", "a0002")
    with psycopg.connect(empty_db) as conn:
        assert catalog.index_names(conn) == ["articles_dups"]
    assert _btrees(empty_db, "articles_fp") == []


MODELS = """
from sqlalchemy import Integer, MetaData, Table, Column, Text
from simdb.sqlalchemy import Signature, jaccard_indexes

metadata = MetaData()
docs = Table(
    "docs", metadata,
    Column("id", Integer, primary_key=True),
    Column("body", Text),
    Column("sig", Signature(threshold=0.7)),
)
jaccard_indexes(docs.c.sig, "docs_alike")
"""

ENV = """
from alembic import context
from autogen_models import metadata

from simdb.alembic.autogenerate import process_revision_directives, render_item
from simdb.sqlalchemy import include_object

context.configure(
    connection=context.config.attributes["connection"],
    target_metadata=metadata,
    include_object=include_object,
    render_item=render_item,
    process_revision_directives=process_revision_directives,
)
with context.begin_transaction():
    context.run_migrations()
"""

FIRST = """
from simdb import alembic as simdb_ops

revision = "j0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    simdb_ops.ensure_schema()


def downgrade() -> None:
    simdb_ops.drop_schema()
"""


def test_autogenerate_attaches_a_jaccard_index_on_a_new_table(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "autogen_models.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    project = tmp_path / "migrations"
    (project / "versions").mkdir(parents=True)
    (project / "env.py").write_text(ENV)
    (project / "versions" / "j0001.py").write_text(FIRST)
    shutil.copy(GENERIC_TEMPLATE, project)
    _run(empty_db, project, "upgrade", "head")
    _run(empty_db, project, "revision", "docs", autogenerate=True, rev_id="j0002")

    written = _generated(project / "versions", "j0002")
    assert "sa.Column('sig', simdb.sqlalchemy.Signature(threshold=0.7), nullable=True)," in written
    assert (
        "    simdb_ops.attach_index('docs_alike', table='public.docs', key_column='id',"
        " signature_column='sig', spec=JaccardSpec(threshold=0.7, permutations=128, signature_spec=2))\n"
    ) in written
    assert "    simdb_ops.drop_index('docs_alike')\n    op.drop_table('docs')\n" in written

    _run(empty_db, project, "upgrade", "head")
    with psycopg.connect(empty_db) as conn:
        assert catalog.index_names(conn) == ["docs_alike"]
    assert len(_btrees(empty_db, "docs_alike")) > 1
    _run(empty_db, project, "revision", "nothing", autogenerate=True, rev_id="j0003")
    again = _generated(project / "versions", "j0003")  # (band keys print otherwise than declared)
    assert "simdb_ops" not in again and "op." not in again.replace("from alembic import op", "")
    (project / "versions" / "j0003_nothing.py").unlink()
    _run(empty_db, project, "downgrade", "j0001")
    with psycopg.connect(empty_db) as conn:
        assert catalog.index_names(conn) == []
        assert conn.execute("SELECT to_regclass('public.docs')").fetchone() == (None,)
