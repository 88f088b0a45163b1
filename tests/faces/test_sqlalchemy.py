"""An index in a model's own column, from SQLAlchemy: `Article.fp.near(fp, k)`
uses its B-trees and equals brute force (sync and async, psycopg and asyncpg), and
simhash_indexes declares those B-trees in the MetaData so that Alembic's autogenerate finds
nothing to change."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy import URL, Column, Engine, Integer, MetaData, Table, create_engine, select, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import NullPool
from sqlalchemy.schema import CreateIndex
from support.oracles import hamming_near

from simdb.errors import InvalidParameter
from simdb.follow import app_column
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardSpec, SimhashSpec
from simdb.sketch.bits import to_signed
from simdb.sketch.minhash import document_signature
from simdb.sqlalchemy import (
    Fingerprint,
    Fingerprint128,
    Signature,
    include_object,
    jaccard_indexes,
    near,
    simhash_indexes,
    similar,
)

ROWS = 20_000


class Base(DeclarativeBase):
    pass


class Article(Base):
    __tablename__ = "articles"

    id: Mapped[int] = mapped_column(primary_key=True)
    fp: Mapped[int | None] = mapped_column(Fingerprint(max_distance=3, blocks=4))


DUPS = simhash_indexes(Article.fp, "articles_dups")  # the B-trees `simdb attach` makes, declared


def _fingerprints() -> dict[int, int]:
    rng = random.Random(2029)
    made = {i: rng.getrandbits(64) for i in range(ROWS)}
    for i in range(200):  # near copies of the first rows, at 1 to 4 bits
        value = made[i]
        for bit in rng.sample(range(64), 1 + i % 4):
            value ^= 1 << bit
        made[ROWS + i] = value
    return made


@pytest.fixture
def articles(dsn: str) -> dict[int, int]:
    """The application's table, filled, and simdb's index in its column (max distance 3, 4 blocks)."""
    fingerprints = _fingerprints()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.articles (id integer PRIMARY KEY, fp bigint)")
        with conn.cursor().copy("COPY public.articles (id, fp) FROM STDIN") as copy:
            for key, value in fingerprints.items():
                copy.write_row((key, to_signed(value)))
        app_column.attach_in_table(
            conn, "articles_dups", "public.articles", "id", "fp", spec=SimhashSpec(3, 4)
        )
        conn.execute("ANALYZE public.articles")
    return fingerprints


def _engine(dsn: str) -> Engine:
    return create_engine("postgresql+psycopg://", creator=lambda: psycopg.connect(dsn), poolclass=NullPool)


def _probes(fingerprints: dict[int, int]) -> list[int]:
    rng = random.Random(7)
    return [fingerprints[i] ^ (1 << rng.randrange(64)) for i in range(0, 200, 7)] + [rng.getrandbits(64)]


def _near_keys(fingerprints: dict[int, int], probe: int, k: int) -> list[int]:
    return sorted(key for key, _ in hamming_near(fingerprints, probe, k))


def test_near_on_the_column_equals_brute_force_and_uses_the_btrees(
    dsn: str, articles: dict[int, int]
) -> None:
    engine = _engine(dsn)
    probes = _probes(articles)
    assert any(p >= 2**63 for p in probes) and any(p < 2**63 for p in probes)
    with Session(engine) as session:
        for probe in probes:
            for k in (0, 2, None):
                found = session.scalars(
                    select(Article.id).where(Article.fp.near(probe, k)).order_by(Article.id)
                ).all()
                assert found == _near_keys(articles, probe, 3 if k is None else k), (probe, k)
        probe = probes[0]
        rows = session.execute(
            select(Article.id, Article.fp.hamming_distance(probe)).where(Article.id < 300)
        ).all()
        assert rows and all(d == (articles[key] ^ probe).bit_count() for key, d in rows)
        statement = select(Article.id).where(Article.fp.near(probe, 3))
        compiled = statement.compile(engine, compile_kwargs={"literal_binds": True})
        plan = "\n".join(line for (line,) in session.execute(text(f"EXPLAIN {compiled}")))
        for number in range(4):
            assert f"Bitmap Index Scan on simdb_articles_dups_p{number}" in plan, plan
        # the statement as sent (the probe a parameter), forced to its generic plan
        session.execute(text("SET plan_cache_mode = force_generic_plan"))
        compiled = statement.compile(engine)
        prepared = str(compiled).replace("%(param_1)s", "$1")
        session.execute(text(f"PREPARE near_probe(bigint) AS {prepared}"))
        plan = "\n".join(
            line for (line,) in session.execute(text(f"EXPLAIN EXECUTE near_probe({to_signed(probe)})"))
        )
        assert all(f"simdb_articles_dups_p{number}" in plan for number in range(4)), plan
        with pytest.raises(InvalidParameter, match=r"outside 0\.\.3"):
            Article.fp.near(probe, 4)
    engine.dispose()


def _asyncpg_url(dsn: str) -> URL:
    params = conninfo_to_dict(dsn)
    return URL.create(
        "postgresql+asyncpg",
        username=str(params.get("user") or "") or None,
        password=str(params.get("password") or "") or None,
        host=str(params.get("host") or "") or None,
        port=int(str(params.get("port") or 5432)),
        database=str(params.get("dbname")),
    )


@pytest.mark.parametrize("driver", ["psycopg", "asyncpg"])
def test_near_on_the_column_from_an_async_session(dsn: str, articles: dict[int, int], driver: str) -> None:
    """AsyncSession (psycopg's AsyncConnection, or asyncpg, which prepares every statement): the
    same predicate, the same rows; under asyncpg the statement repeated past PostgreSQL's custom
    plans still finds them."""
    probes = _probes(articles)

    async def run() -> list[list[int]]:
        if driver == "psycopg":
            engine = create_async_engine(
                "postgresql+psycopg://",
                async_creator=lambda: psycopg.AsyncConnection.connect(dsn),
                poolclass=NullPool,
            )
        else:
            engine = create_async_engine(_asyncpg_url(dsn), poolclass=NullPool)
        found = []
        async with AsyncSession(engine) as session:
            for probe in probes:
                result = await session.scalars(
                    select(Article.id).where(Article.fp.near(probe, 3)).order_by(Article.id)
                )
                found.append(list(result.all()))
                dups = near("articles_dups", probe, 3)  # simdb.near, the SQL function, as a table
                keys = await session.scalars(select(dups.c.key))
                assert sorted(int(key) for key in keys.all()) == found[-1]
        await engine.dispose()
        return found

    assert asyncio.run(run()) == [_near_keys(articles, probe, 3) for probe in probes]


def _expressions(conn: psycopg.Connection[Any], prefix: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT c.relname, pg_get_expr(x.indexprs, x.indrelid) FROM pg_index AS x"
        " JOIN pg_class AS c ON c.oid = x.indexrelid WHERE c.relname LIKE %s ORDER BY 1",
        (prefix + "%",),
    ).fetchall()
    return [(str(name).removeprefix(prefix), str(expression)) for name, expression in rows]


def test_the_declared_btrees_are_the_ones_simdb_attach_makes(dsn: str, articles: dict[int, int]) -> None:
    """Alembic's autogenerate against the migrated database proposes nothing; and the B-trees
    SQLAlchemy itself would create have simdb's expressions."""
    engine = _engine(dsn)
    assert [ix.name for ix in DUPS] == [f"simdb_articles_dups_p{number}" for number in range(4)]
    with engine.connect() as connection:
        opts = {"include_object": include_object}
        context = MigrationContext.configure(connection, opts=opts)
        assert compare_metadata(context, Base.metadata) == []
        unfiltered = compare_metadata(MigrationContext.configure(connection), Base.metadata)
        assert [(step[0], step[1].name) for step in unfiltered] == [
            ("remove_index", "simdb_articles_dups_key")
        ]
        other = MetaData()  # the same names on other expressions (5 blocks): autogenerate sees it
        table = Table("articles", other, Column("id", Integer, primary_key=True), Column("fp", Fingerprint()))
        simhash_indexes(table, "articles_dups", 3, blocks=5)
        changed = compare_metadata(MigrationContext.configure(connection, opts=opts), other)
        assert ("remove_index", "simdb_articles_dups_p0") in [(step[0], step[1].name) for step in changed]
        for ix in simhash_indexes(Article.__table__, "copy"):
            connection.execute(CreateIndex(ix))
        connection.commit()
    with psycopg.connect(dsn) as conn:
        made_by_simdb = _expressions(conn, "simdb_articles_dups_p")
        made_by_sqlalchemy = _expressions(conn, "simdb_copy_p")
        assert len(made_by_simdb) == 4 and made_by_sqlalchemy == made_by_simdb
        assert index.get(conn, "articles_dups").plan == Article.fp.type.plan.plan
    engine.dispose()


def test_a_column_without_index_settings_says_how_to_give_them() -> None:
    class Other(DeclarativeBase):
        pass

    class Plain(Other):
        __tablename__ = "plain"

        id: Mapped[int] = mapped_column(primary_key=True)
        fp: Mapped[int | None] = mapped_column(Fingerprint())

    with pytest.raises(InvalidParameter, match="no index settings"):
        Plain.fp.near(5, 3)


def test_a_128_bit_column_and_settings_read_from_the_database(dsn: str) -> None:
    """Fingerprint128 columns get the same methods; index= takes the plan simdb.index.get reads."""

    class Wide(DeclarativeBase):
        pass

    class Page(Wide):
        __tablename__ = "pages"

        id: Mapped[int] = mapped_column(primary_key=True)
        fp: Mapped[int | None] = mapped_column(Fingerprint128())

    rng = random.Random(128)
    fingerprints = {i: rng.getrandbits(128) for i in range(3000)}
    for i in range(50):
        fingerprints[5000 + i] = fingerprints[i] ^ (1 << rng.randrange(128)) ^ (1 << rng.randrange(128))
    engine = _engine(dsn)
    Wide.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all(Page(id=key, fp=value) for key, value in fingerprints.items())
        session.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        spec = SimhashSpec(max_distance=4, blocks=6, bits=128)
        app_column.attach_in_table(conn, "pages_dups", "public.pages", "id", "fp", spec=spec)
        made = index.get(conn, "pages_dups")
    with Session(engine) as session:
        for probe in [fingerprints[i] ^ 1 for i in range(0, 50, 5)]:
            found = session.scalars(
                select(Page.id).where(Page.fp.near(probe, 3, index=made)).order_by(Page.id)
            ).all()
            assert found == _near_keys(fingerprints, probe, 3)
        distance = session.scalar(select(Page.fp.hamming_distance(fingerprints[0] ^ 7)).where(Page.id == 0))
        assert distance == 3
    engine.dispose()


def test_a_signature_column_finds_what_simdb_similar_finds_through_the_band_btrees(dsn: str) -> None:
    """A jaccard index in the model's own column: Doc.sig.similar(sig, s) is simdb.similar's
    answer, through the band B-trees that jaccard_indexes declares."""

    class Docs(DeclarativeBase):
        pass

    class Doc(Docs):
        __tablename__ = "docs"

        id: Mapped[int] = mapped_column(primary_key=True)
        sig: Mapped[Any] = mapped_column(Signature(threshold=0.8), nullable=True)

    declared = jaccard_indexes(Doc.sig, "docs_alike")
    rng = random.Random(80)
    words = [f"w{i}" for i in range(5000)]
    texts = {i: " ".join(rng.choices(words, k=300)) for i in range(1500)}
    for i in range(60):  # near copies: a few words changed
        changed = texts[i].split()
        for _ in range(1 + i % 12):
            changed[rng.randrange(len(changed))] = rng.choice(words)
        texts[2000 + i] = " ".join(changed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.docs (id integer PRIMARY KEY, sig bigint[])")
    engine = _engine(dsn)
    with Session(engine) as session:
        session.add_all(Doc(id=key, sig=document_signature(text)) for key, text in texts.items())
        session.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        app_column.attach_in_table(
            conn, "docs_alike", "public.docs", "id", "sig", spec=JaccardSpec(threshold=0.8)
        )
        conn.execute("ANALYZE public.docs")
    with Session(engine) as session:
        for i in range(0, 60, 3):
            probe = document_signature(texts[i])
            for wanted in (None, 0.9):
                found = session.execute(
                    select(Doc.id, Doc.sig.jaccard_estimate(probe)).where(Doc.sig.similar(probe, wanted))
                ).all()
                alike = similar("docs_alike", probe, wanted)
                expected = session.execute(select(alike.c.key, alike.c.similarity)).all()
                assert sorted((str(key), s) for key, s in found) == sorted(expected), (i, wanted)
                assert any(key == i for key, _ in found)
        compiled = (
            select(Doc.id)
            .where(Doc.sig.similar(probe))
            .compile(engine, compile_kwargs={"literal_binds": True})
        )
        plan = "\n".join(line for (line,) in session.execute(text(f"EXPLAIN {compiled}")))
        assert all(f"Bitmap Index Scan on simdb_docs_alike_b{n}" in plan for n in range(len(declared))), plan
    with engine.connect() as connection:
        # PostgreSQL's own text of a band key groups its chain of # in parentheses that Alembic's
        # normalisation keeps, so autogenerate sees every band B-tree as changed (a known limit)
        context = MigrationContext.configure(connection, opts={"include_object": include_object})
        steps = {(step[0], step[1].name) for step in compare_metadata(context, Docs.metadata)}
        assert steps == {(kind, ix.name) for ix in declared for kind in ("add_index", "remove_index")}
        for ix in jaccard_indexes(Doc.sig, "copy"):  # although the expressions are the same
            connection.execute(CreateIndex(ix))
        connection.commit()
    with psycopg.connect(dsn) as conn:
        made_by_simdb = _expressions(conn, "simdb_docs_alike_b")
        assert len(made_by_simdb) == len(declared) and _expressions(conn, "simdb_copy_b") == made_by_simdb
    engine.dispose()
