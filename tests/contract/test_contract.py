"""The contract every mode of index keeps, each mode judged by its own brute-force oracle over the
sketches it stored: near, pairs, clusters and dedup equal brute force, in Python and in SQL, each
pair once, and a cutoff beyond the index's own is refused.

A new mode joins by adding its Oracle to ORACLES. Each contract holds for an index on one server
and for one distributed over a Citus cluster (the `citus` marker; see conftest).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from support import Conn, cleared_citus, fresh_database
from support.oracles import ORACLES, PLACEMENTS, Oracle, components, sketches

from simdb import duplicates, ingest, query
from simdb.errors import InvalidParameter
from simdb.follow import keep
from simdb.index import changes

PLACES = [
    pytest.param("local"),
    pytest.param("in_table"),
    pytest.param("side"),
    pytest.param("citus", marks=pytest.mark.citus),
    pytest.param("citus_in_table", marks=pytest.mark.citus),
    pytest.param("citus_prefix", marks=pytest.mark.citus),
]


@contextlib.contextmanager
def _connected(request: pytest.FixtureRequest, where: str) -> Iterator[Conn]:
    """A connection to a fresh database (local: simdb's own table; in_table: the rows in an
    application's table, storage.column; side: a side table of an application's texts), or to
    the Citus coordinator (citus; citus_in_table: the application's table distributed by its
    key; citus_prefix: Manku's layout, placement.ByPrefix)."""
    if where.startswith("citus"):
        with cleared_citus(request.getfixturevalue("citus_dsn")) as citus:
            citus.execute("DROP TABLE IF EXISTS app_docs")
            yield citus
            citus.execute("DROP TABLE IF EXISTS app_docs CASCADE")
        return
    admin, template = request.getfixturevalue("admin_dsn"), request.getfixturevalue("template_db")
    with fresh_database(admin, template) as url, psycopg.connect(url, autocommit=True) as connection:
        yield connection


def _built(mode: str, where: str, conn: Conn) -> Oracle:
    """Index "docs" of one mode, filled with its oracle's planted rows, where `where` says."""
    storage = "column" if where.endswith("in_table") else "side" if where == "side" else "own"
    if mode == "simhash_covering" and (storage == "column" or where == "citus_prefix"):
        pytest.skip("B-trees carry the fingerprint in simdb's own tables only (simhash tests the others)")
    return ORACLES[mode](conn, PLACEMENTS[where], storage)


# A test that writes gets an index of its own (TestReads' tests share one).
@pytest.fixture(params=PLACES)
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def conn(request: pytest.FixtureRequest, where: str) -> Iterator[Conn]:
    with _connected(request, where) as connection:
        yield connection


@pytest.fixture(params=list(ORACLES))
def oracle(request: pytest.FixtureRequest, where: str, conn: Conn) -> Oracle:
    return _built(request.param, where, conn)


class TestReads:
    """The tests that write no row (near, pairs, clusters and dedup; the last two replace the
    stored clusters, each from the pairs) share one index per placement and mode, built once
    instead of once per test."""

    @pytest.fixture(scope="class", params=PLACES)
    @classmethod
    def where(cls, request: pytest.FixtureRequest) -> str:
        return str(request.param)

    @pytest.fixture(scope="class", params=list(ORACLES))
    @classmethod
    def built(cls, request: pytest.FixtureRequest, where: str) -> Iterator[tuple[Conn, Oracle]]:
        with _connected(request, where) as connection:
            yield connection, _built(request.param, where, connection)

    @pytest.fixture(scope="class")
    @classmethod
    def conn(cls, built: tuple[Conn, Oracle]) -> Conn:
        return built[0]

    @pytest.fixture(scope="class")
    @classmethod
    def oracle(cls, built: tuple[Conn, Oracle]) -> Oracle:
        return built[1]

    @pytest.mark.parametrize("step", [0, 1, 2])
    def test_pairs_equal_brute_force_each_once(self, conn: Conn, oracle: Oracle, step: int) -> None:
        made, cutoff = oracle.made, oracle.cutoffs[step]
        found_pairs = list(duplicates.pairs(conn, made, **oracle.cutoff_argument(cutoff)))
        found = [(p.key_a, p.key_b, getattr(p, made.score_column)) for p in found_pairs]
        assert len(found) == len(set(found))  # pairs found by several tables or bands come back once
        expected = oracle.pairs(oracle.effective(cutoff))
        assert set(found) == expected and len(expected) >= 40  # the planted copies, not an empty answer
        assert all(
            (p.similarity, p.distance) == made.scored(getattr(p, made.score_column)) for p in found_pairs
        )
        in_sql = conn.execute(oracle.sql_pairs, (cutoff,)).fetchall()
        assert len(in_sql) == len(expected) and set(in_sql) == expected

    @pytest.mark.parametrize("step", [0, 1, 2])
    def test_near_equals_brute_force(self, conn: Conn, oracle: Oracle, step: int) -> None:
        made, cutoff = oracle.made, oracle.cutoffs[step]
        for probe in oracle.probes:
            expected = oracle.near(probe, oracle.effective(cutoff))
            found = query.near(conn, made, oracle.stored[probe], **oracle.cutoff_argument(cutoff))
            assert [(m.key, getattr(m, made.score_column)) for m in found] == expected
            assert expected[0] == (probe, oracle.perfect)
            assert conn.execute(oracle.sql_near_key, (probe, cutoff)).fetchall() == expected
            sketch = made.to_sql(oracle.stored[probe])
            assert conn.execute(oracle.sql_near, (sketch, cutoff)).fetchall() == expected

    def test_clusters_are_connected_components_stored_for_sql(self, conn: Conn, oracle: Oracle) -> None:
        made = oracle.made
        found = duplicates.clusters(conn, made)
        own = oracle.effective(None)
        assert found.cutoff == own and found.described == oracle.described
        assert found.groups == components(oracle.pairs(own))
        assert all(len(group) >= 2 for group in found.groups)
        for group in found.groups:  # the copies of one planted document, never an unrelated row
            assert len({key.split("_")[0] for key in group}) == 1 and not group[0].startswith(
                oracle.unrelated
            )
        stored = conn.execute(
            "SELECT cluster, array_agg(key ORDER BY key) FROM simdb.docs__clusters GROUP BY 1 ORDER BY 1"
        )
        assert [keys for _, keys in stored.fetchall()] == found.groups
        recorded = conn.execute(f"SELECT DISTINCT {made.cutoff_column} FROM simdb.docs__clusters").fetchall()
        assert recorded == [(own,)]
        joined = conn.execute(
            "SELECT count(*) FROM simdb.docs AS d JOIN simdb.docs__clusters AS c USING (key)"
        ).fetchone()
        assert joined == (found.keys,)
        # recomputing replaces the table
        smaller = duplicates.clusters(conn, made, **oracle.cutoff_argument(oracle.cutoffs[-1]))
        assert conn.execute("SELECT count(*) FROM simdb.docs__clusters").fetchone() == (smaller.keys,)

    def test_dedup_keeps_one_key_per_cluster(self, conn: Conn, oracle: Oracle) -> None:
        found = duplicates.clusters(conn, oracle.made)
        decisions = list(duplicates.dedup(conn, oracle.made, "first"))
        assert sum(d.keep for d in decisions) == len(found.groups)
        by_cluster: dict[int, list[str]] = {}
        for decision in decisions:
            by_cluster.setdefault(decision.cluster, []).append(decision.key)
        assert sorted(sorted(keys) for keys in by_cluster.values()) == found.groups

    def test_a_cutoff_beyond_the_index_is_refused(self, conn: Conn, oracle: Oracle) -> None:
        beyond = oracle.cutoff_argument(oracle.too_far)
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute(oracle.sql_pairs, (oracle.too_far,))
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            conn.execute(oracle.sql_near_key, (oracle.probes[0], oracle.too_far))
        with pytest.raises(InvalidParameter):
            list(duplicates.pairs(conn, oracle.made, **beyond))


def test_writes_keep_near_and_pairs_exact(conn: Conn, oracle: Oracle) -> None:
    """Rows updated with other sketches, removed by key, and written again: near and all pairs
    still equal brute force over what is stored now (by prefix, the probe table follows every
    write of simdb's)."""
    made = oracle.made
    if not made.storage.writes_own_rows:
        pytest.skip("the application writes an index in its own table")
    if oracle.texts:
        _rewrite_side_table(conn, oracle)
        return
    keys = sorted(oracle.stored)
    moved = {key: oracle.stored[keys[-1 - n]] for n, key in enumerate(keys[:40])}  # other rows' sketches
    ingest.store(conn, made, moved)
    gone = [*keys[40:60], oracle.probes[0]]
    assert ingest.delete(conn, made, gone) == len(set(gone))
    again = {keys[41]: oracle.stored[keys[41]]}  # a removed key written back
    ingest.store(conn, made, again)
    written = {**oracle.stored, **moved}
    oracle.stored = {**{k: v for k, v in written.items() if k not in gone}, **again}
    oracle.__dict__.pop("bands", None)  # (a jaccard oracle's band keys of the stored rows)
    found = {(p.key_a, p.key_b, getattr(p, made.score_column)) for p in duplicates.pairs(conn, made)}
    assert found == oracle.pairs(oracle.effective(None))
    for probe in (*oracle.probes[:2], keys[0], keys[41]):
        if probe in oracle.stored:
            expected = oracle.near(probe, oracle.effective(None))
            found_near = query.near(conn, made, oracle.stored[probe])
            assert [(m.key, getattr(m, made.score_column)) for m in found_near] == expected


def _rewrite_side_table(conn: Conn, oracle: Oracle) -> None:
    """The writes of test_writes_keep_near_and_pairs_exact made where a side table's rows come
    from, the application's table (texts moved, rows deleted, one written back), then a sync:
    near and all pairs equal brute force over the sketches of the table's texts now."""
    made, texts = oracle.made, dict(oracle.texts)
    keys = sorted(texts)
    moved = {key: texts[keys[-1 - n]] for n, key in enumerate(keys[:40])}
    for key, text in moved.items():
        conn.execute("UPDATE app_docs SET body = %s WHERE id = %s", (text, key))
    gone = [*keys[40:60], oracle.probes[0]]
    conn.execute("DELETE FROM app_docs WHERE id = ANY(%s)", (gone,))
    conn.execute("INSERT INTO app_docs VALUES (%s, %s)", (keys[41], texts[keys[41]]))
    keep.sync(conn, "docs")
    texts.update(moved)
    kept = {key: text for key, text in texts.items() if key not in gone or key == keys[41]}
    oracle.stored = sketches(made, kept)
    oracle.__dict__.pop("bands", None)
    found = {(p.key_a, p.key_b, getattr(p, made.score_column)) for p in duplicates.pairs(conn, made)}
    assert found == oracle.pairs(oracle.effective(None))
    assert set(conn.execute("SELECT key FROM simdb.docs").fetchall()) == {(key,) for key in oracle.stored}
    for probe in (*oracle.probes[1:3], keys[0], keys[41]):
        if probe in oracle.stored:
            expected = oracle.near(probe, oracle.effective(None))
            found_near = query.near(conn, made, oracle.stored[probe])
            assert [(m.key, getattr(m, made.score_column)) for m in found_near] == expected


@pytest.mark.parametrize("way", ["probes", "paired"])
def test_new_pairs_are_the_pairs_that_writes_add(
    conn: Conn, oracle: Oracle, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pairs --new: the first run of a consumer reads every pair and starts tracking changes; after
    rows are added, rewritten and removed, the next reports exactly the pairs of the index now that
    involve a written row, which hold every pair the second full run has and the first had not;
    with nothing written since, none. simdb.pairs_since agrees from the first run's mark. Both
    ways give it: a near query per written row (`probes`), or the written rows' pairs found in
    memory (`paired`, the way when many rows were written)."""
    monkeypatch.setattr(changes, "PROBE_S_PER_BTREE", 0.0 if way == "probes" else 1.0)
    made = oracle.made
    if not made.storage.writes_own_rows or made.placement.distributed:
        with pytest.raises(InvalidParameter):
            list(duplicates.pairs(conn, made, new_for="default"))
        return

    def full() -> set[tuple[str, str, object]]:
        return {(p.key_a, p.key_b, getattr(p, made.score_column)) for p in duplicates.pairs(conn, made)}

    def new(consumer: str = "nightly") -> set[tuple[str, str, object]]:
        return {
            (p.key_a, p.key_b, getattr(p, made.score_column))
            for p in duplicates.pairs(conn, made, new_for=consumer)
        }

    before = full()
    assert new() == before and len(before) >= 40
    (mark,) = conn.execute(
        "SELECT mark::text FROM simdb._pair_marks WHERE index_name = 'docs' AND consumer = 'nightly'"
    ).fetchone()
    keys = sorted(oracle.stored)
    if oracle.texts:
        texts = oracle.texts
        for n, key in enumerate(keys[:40]):
            conn.execute("UPDATE app_docs SET body = %s WHERE id = %s", (texts[keys[-1 - n]], key))
        for n, key in enumerate(keys[60:80]):
            conn.execute("INSERT INTO app_docs VALUES (%s, %s)", (f"new{n}", texts[key]))
        conn.execute("DELETE FROM app_docs WHERE id = ANY(%s)", (keys[100:110],))
        keep.sync(conn, "docs")
        now = sketches(made, {row[0]: row[1] for row in conn.execute("SELECT id, body FROM app_docs")})
    else:
        moved = {key: oracle.stored[keys[-1 - n]] for n, key in enumerate(keys[:40])}
        added = {f"new{n}": oracle.stored[key] for n, key in enumerate(keys[60:80])}
        ingest.store(conn, made, {**moved, **added})
        ingest.delete(conn, made, keys[100:110])
        now = {
            key: value
            for key, value in {**oracle.stored, **moved, **added}.items()
            if key not in keys[100:110]
        }
    written = {key for key in now if key.startswith("new")} | {
        key for key in keys[:40] if not np.array_equal(now[key], oracle.stored[key])
    }
    after = full()
    found = new()
    assert found == {pair for pair in after if pair[0] in written or pair[1] in written}
    assert after - before <= found and len(after - before) >= 20
    assert new() == set()
    assert new("weekly") == after  # another consumer's first run
    function = "pairs_since" if made.score_column == "distance" else "similar_pairs_since"
    in_sql = conn.execute(f"SELECT * FROM simdb.{function}('docs', %s::pg_snapshot)", (mark,)).fetchall()
    assert len(in_sql) == len(found) and set(in_sql) == found


@pytest.mark.parametrize("way", ["probes", "paired"])
def test_new_clusters_merge_the_pairs_of_rows_added(
    conn: Conn, oracle: Oracle, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clusters --new: the first run stores every cluster and starts tracking; rows added since
    (copies of planted and of unrelated rows) are merged in, giving the clusters a full run
    gives, stored for SQL; a run with nothing written since reads no pair (either way of
    finding the new pairs, as test_new_pairs_are_the_pairs_that_writes_add)."""
    monkeypatch.setattr(changes, "PROBE_S_PER_BTREE", 0.0 if way == "probes" else 1.0)
    made = oracle.made
    if not made.storage.writes_own_rows or made.placement.distributed:
        with pytest.raises(InvalidParameter):
            duplicates.clusters(conn, made, new=True)
        return
    first = duplicates.clusters(conn, made, new=True)
    assert first.groups == components(oracle.pairs(oracle.effective(None))) and not first.merged
    keys = sorted(oracle.stored)
    copied = [*keys[:10], *[key for key in keys if key.startswith(oracle.unrelated)][:10]]
    if oracle.texts:
        for n, key in enumerate(copied):
            conn.execute("INSERT INTO app_docs VALUES (%s, %s)", (f"new{n}", oracle.texts[key]))
        keep.sync(conn, "docs")
    else:
        ingest.store(conn, made, {f"new{n}": oracle.stored[key] for n, key in enumerate(copied)})
    merged = duplicates.clusters(conn, made, new=True)
    assert merged.merged and merged.pairs >= len(copied)
    assert merged.groups == duplicates.groups(conn, made)[0] != first.groups
    stored = conn.execute(
        "SELECT array_agg(key ORDER BY key) FROM simdb.docs__clusters GROUP BY cluster ORDER BY cluster"
    )
    assert [keys for (keys,) in stored.fetchall()] == merged.groups
    again = duplicates.clusters(conn, made, new=True)
    assert (again.pairs, again.groups, again.merged) == (0, merged.groups, True)
