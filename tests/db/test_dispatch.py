"""simdb.near, generated on every create and drop: the same answers and errors as the index's own
function and as the hand-written dispatcher (simdb_internal._near_dynamic) it falls back to."""

from __future__ import annotations

import psycopg
import pytest
from support import Conn

from simdb import ingest
from simdb.db.bit_string import BitString
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardSpec, SimhashSpec

TEXTS = {f"k{i}": " ".join(f"word{(i * 7 + j) % 50} w{j}" for j in range(40)) for i in range(30)}


def _loaded(conn: Conn, name: str, spec: SimhashSpec) -> list[object]:
    made = index.create(conn, name, spec, expected_rows=1000)
    sketches = {key: made.sketch(text) for key, text in TEXTS.items()}
    ingest.store(conn, made, sketches)
    return [made.to_sql(sketch) for sketch in sketches.values()]


def _near(conn: Conn, function: str, name: str, value: object, k: int | None) -> list[tuple[object, ...]]:
    """simdb.near, or simdb_internal._near_dynamic, called as `function`."""
    return conn.execute(f"SELECT * FROM {function}(%s, %s, %s)", (name, value, k)).fetchall()


def test_every_index_is_dispatched_to_its_own_function(conn: Conn) -> None:
    narrow = _loaded(conn, "narrow", SimhashSpec(max_distance=4))
    wide = _loaded(conn, "wide", SimhashSpec(max_distance=12, bits=128))
    _loaded(conn, "other", SimhashSpec(max_distance=2))
    for name, values, limit in (("narrow", narrow, 4), ("wide", wide, 12)):
        for value in values[:10]:
            for k in (None, 0, limit):
                expected = conn.execute(
                    f'SELECT * FROM simdb_internal."{name}__near"(%s, %s)', (value, limit if k is None else k)
                ).fetchall()
                assert _near(conn, "simdb.near", name, value, k) == expected
                assert _near(conn, "simdb_internal._near_dynamic", name, value, k) == expected
                assert expected  # at least the row itself
    index.drop(conn, "other")
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'other'"):
        _near(conn, "simdb.near", "other", narrow[0], None)


def test_what_no_branch_serves_gets_the_usual_errors(conn: Conn) -> None:
    narrow = _loaded(conn, "narrow", SimhashSpec(max_distance=3))
    index.create(conn, "pages", JaccardSpec())
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"max distance 4 is outside 0\.\.3"):
        _near(conn, "simdb.near", "narrow", narrow[0], 4)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"max distance -1 is outside 0\.\.3"):
        _near(conn, "simdb.near", "narrow", narrow[0], -1)
    with pytest.raises(psycopg.errors.WrongObjectType, match="'pages' is a jaccard index"):
        _near(conn, "simdb.near", "pages", narrow[0], None)
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'nothing'"):
        _near(conn, "simdb.near", "nothing", narrow[0], None)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="'narrow' takes bigint fingerprints"):
        _near(conn, "simdb.near", "narrow", BitString(1, 128), None)


def test_an_index_made_in_a_rolled_back_transaction_leaves_no_branch(conn: Conn) -> None:
    with pytest.raises(RuntimeError), conn.transaction():
        index.create(conn, "gone", SimhashSpec())
        assert _near(conn, "simdb.near", "gone", 1, None) == []  # served inside the transaction
        raise RuntimeError("roll back")
    with pytest.raises(psycopg.errors.UndefinedObject, match="no index named 'gone'"):
        _near(conn, "simdb.near", "gone", 1, None)
