"""An application with its own SQLAlchemy model and Alembic history adds simdb, then queries it."""

from __future__ import annotations

from pathlib import Path

import psycopg
from alembic import command
from alembic.config import Config
from example_app.models import Article
from sqlalchemy import BigInteger, Text, cast, column, create_engine, literal, select, table
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

from simdb import attach, fingerprint, schema
from simdb.sqlalchemy import Fingerprint, hamming, near, near_key

APP = Path(__file__).resolve().parent / "example_app"
BODY = " ".join(f"paragraph{i} about{i % 9} things" for i in range(200))


def _alembic(dsn: str, action: str, revision: str) -> None:
    config = Config()
    config.set_main_option("script_location", str(APP / "migrations"))
    engine = create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, action)(config, revision)
    engine.dispose()


def test_app_migrations_attach_simdb_and_queries_join_the_model(empty_db: str) -> None:
    _alembic(empty_db, "upgrade", "head")
    engine = create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(empty_db), poolclass=NullPool
    )
    with Session(engine) as session:
        session.add_all(
            [
                Article(id=1, title="original", body=BODY),
                Article(id=2, title="reposted", body=BODY + " (reposted)"),
                Article(id=3, title="other", body="a different story altogether, with other words"),
            ]
        )
        session.commit()
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert attach.sync(conn, "articles_dups").added == 3

    with Session(engine) as session:
        dups = near("articles_dups", fingerprint(BODY), 3)
        rows = session.execute(
            select(Article.title, dups.c.distance)
            .join(dups, cast(Article.id, Text) == dups.c.key)
            .order_by(dups.c.distance, Article.id)
        ).all()
        assert [title for title, _ in rows] == ["original", "reposted"]
        assert rows[0].distance == 0
        around = near_key("articles_dups", "1")
        titles = session.scalars(
            select(Article.title).join(around, cast(Article.id, Text) == around.c.key)
        ).all()
        assert sorted(titles) == ["original", "reposted"]
        distance = session.scalar(select(hamming(0xFFFFFFFFFFFFFFFF, 0x0F)))
        assert distance == 60
        rows_table = table(
            "articles_dups", column("key", Text), column("fingerprint", Fingerprint()), schema="simdb"
        )
        stored = session.scalar(select(rows_table.c.fingerprint).where(rows_table.c.key == "1"))
        assert stored == fingerprint(BODY)  # read back unsigned through the Fingerprint type
        assert session.scalar(select(literal(2**64 - 1, Fingerprint()))) == 2**64 - 1
        assert session.scalar(select(cast(literal(2**64 - 1, Fingerprint()), BigInteger))) == -1
    engine.dispose()

    _alembic(empty_db, "downgrade", "base")
    with psycopg.connect(empty_db) as conn:
        gone = conn.execute("SELECT to_regclass('public.articles'), to_regnamespace('simdb')").fetchone()
        assert gone == (None, None)
