"""Index layout v2: a populated database made at revision 0005 (layout v1) moves to it with
migration 0006, losing no row, answering queries throughout and giving the same answers."""

from __future__ import annotations

import threading

import psycopg
from psycopg import sql
from support import TESTS, Conn

from simdb import ingest, query, schema
from simdb.follow import keep
from simdb.index import lifecycle as index
from simdb.sketch.bits import hamming, to_unsigned

FIXTURE = TESTS / "fixtures" / "layout_v1.sql"
INDEXES = {"docs": "fingerprint", "wide": "fingerprint", "jac": "signature", "arts": "fingerprint"}
ROW = sql.SQL("key, {}, size, content_hash, extension, added_at")


def _restore(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(FIXTURE.read_text(encoding="utf-8"))
        conn.execute("SELECT pg_catalog.set_config('search_path', 'public', false)")


def _rows(conn: Conn) -> dict[str, list[tuple[object, ...]]]:
    return {
        name: conn.execute(
            sql.SQL("SELECT {} FROM {} ORDER BY key").format(
                ROW.format(sql.Identifier(sketch)), sql.Identifier("simdb", name)
            )
        ).fetchall()
        for name, sketch in INDEXES.items()
    }


def _answers(conn: Conn) -> dict[str, list[tuple[object, ...]]]:
    """Every index's pairs, and near/similar for a few of its own rows, through the SQL functions."""
    found: dict[str, list[tuple[object, ...]]] = {}
    for name, sketch in INDEXES.items():
        function = "similar_pairs" if name == "jac" else "pairs"
        found[f"{name} pairs"] = conn.execute(
            sql.SQL("SELECT * FROM simdb.{}(%s) ORDER BY 1, 2").format(sql.Identifier(function)), (name,)
        ).fetchall()
        near = "similar" if name == "jac" else "near"
        for key, value in conn.execute(
            sql.SQL("SELECT key, {} FROM {} ORDER BY key LIMIT 5").format(
                sql.Identifier(sketch), sql.Identifier("simdb", name)
            )
        ):
            found[f"{name} {key}"] = conn.execute(
                sql.SQL("SELECT * FROM simdb.{}(%s, %s)").format(sql.Identifier(near)), (name, value)
            ).fetchall()
    return found


def test_migration_0006_moves_populated_v1_indexes_and_answers_throughout(empty_db: str) -> None:
    _restore(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == "0005"
        assert conn.execute(
            "SELECT count(*) FROM information_schema.columns WHERE column_name = 'id'"
        ).fetchone()
        rows, answers = _rows(conn), _answers(conn)
        probe = conn.execute("SELECT fingerprint FROM simdb.docs WHERE key = 'r000'").fetchone()
        assert probe is not None
        expected = conn.execute("SELECT * FROM simdb.near('docs', %s, 3)", probe).fetchall()
        assert len(expected) >= 2  # r000 and its planted neighbour n000 at least
    # a reader queries the index without pause while the migration runs
    seen: list[list[tuple[object, ...]]] = []
    failures: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            with psycopg.connect(empty_db, autocommit=True) as reader:
                while not done.is_set() or not seen:
                    seen.append(reader.execute("SELECT * FROM simdb.near('docs', %s, 3)", probe).fetchall())
        except BaseException as error:
            failures.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        schema.upgrade(empty_db)
    finally:
        done.set()
        reader.join()
    assert failures == [] and seen and all(answer == expected for answer in seen)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert _rows(conn) == rows  # every row, every column kept
        assert _answers(conn) == answers
        for name in INDEXES:
            made = index.get(conn, name)
            columns = conn.execute(
                "SELECT array_agg(column_name::text ORDER BY ordinal_position) FROM information_schema.columns"
                " WHERE table_schema = 'simdb' AND table_name = %s",
                (name,),
            ).fetchone()
            assert columns is not None and "id" not in columns[0] and not set(made.columns) & set(columns[0])
            primary = conn.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'",
                (f"simdb.{name}",),
            ).fetchone()
            assert primary == ("PRIMARY KEY (key)",)
        # exact against brute force on the moved 64-bit index, and writable as before
        docs = index.get(conn, "docs")
        stored = {
            str(k): to_unsigned(int(v)) for k, v in conn.execute("SELECT key, fingerprint FROM simdb.docs")
        }
        for key in list(stored)[:40]:
            truth = sorted(
                (hamming(stored[key], v), k) for k, v in stored.items() if hamming(stored[key], v) <= 3
            )
            assert [(m.distance, m.key) for m in query.near(conn, docs, stored[key])] == truth
        ingest.store(conn, docs, {"new": stored["r001"] ^ 1})
        assert [m.key for m in query.near(conn, docs, stored["r001"], max_distance=1)][:2] == ["r001", "new"]
        # the attached index still follows its source table
        conn.execute("DELETE FROM public.articles WHERE id = 7")
        assert conn.execute("SELECT count(*) FROM simdb.arts WHERE key = '7'").fetchone() == (0,)
        conn.execute("INSERT INTO public.articles VALUES (100, 'article number 3 about 3 things and words')")
        assert keep.sync(conn, "arts").added == 1
    # an older revision reads the moved tables as they are, and upgrading again changes nothing
    schema.downgrade(empty_db, "0005")
    schema.upgrade(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert schema.current_revision(conn) == schema.HEAD
        assert [m.key for m in query.near(conn, index.get(conn, "docs"), stored["r001"], max_distance=1)][
            :2
        ] == [
            "r001",
            "new",
        ]
