"""The contract every mode of index keeps, each mode judged by its own brute-force oracle over the
sketches it stored: near, pairs, clusters and dedup equal brute force, in Python and in SQL, each
pair once, and a cutoff beyond the index's own is refused.

A new mode joins by adding its Oracle to ORACLES. Each contract holds for an index on one server
and for one distributed over a Citus cluster (the `citus` marker; see conftest).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from typing import ClassVar

import numpy as np
import psycopg
import pytest
from psycopg import sql
from support import Conn, jaccard_corpus

from simdb import duplicates, ingest, query
from simdb.errors import InvalidParameter
from simdb.follow import app_column
from simdb.index import lifecycle as index
from simdb.index.modes import Index, JaccardIndex, JaccardSpec, SimhashSpec, Sketch, Spec
from simdb.index.placement import LOCAL, ByPrefix, Distributed, Placement
from simdb.sketch.features import DEFAULT_FEATURES

Score = int | float


class Oracle(ABC):
    """One mode's planted data, and the answers a brute-force pass over what was stored gives."""

    spec: ClassVar[Spec]
    sql_near: ClassVar[str]  # the SQL face's near-a-sketch function of this mode
    sql_near_key: ClassVar[str]  # its near-a-stored-key function
    sql_pairs: ClassVar[str]  # and its all-pairs function
    cutoffs: ClassVar[tuple[Score | None, ...]]  # None: the index's own; then tighter ones
    too_far: ClassVar[Score]  # a cutoff the index cannot answer exactly
    probes: ClassVar[tuple[str, ...]]
    perfect: ClassVar[Score]  # the score of a row with itself
    described: ClassVar[str]  # the index's own cutoff in words
    unrelated: ClassVar[str]  # key prefix of rows planted far from everything

    def __init__(self, conn: Conn, placed: Placement, in_table: bool = False) -> None:
        if in_table:
            self.made, self.stored = _in_table(conn, self, placed)
            return
        self.made = index.create(conn, "docs", self.spec, expected_rows=4000, placed=placed)
        self.stored = self.rows(self.made)
        ingest.store(conn, self.made, self.stored)
        ingest.vacuum(conn, self.made)

    @abstractmethod
    def rows(self, made: Index) -> dict[str, Sketch]:
        """The planted rows: groups of near copies keyed GROUP_..., and unrelated rows."""

    @abstractmethod
    def pairs(self, cutoff: Score) -> set[tuple[str, str, Score]]:
        """Every stored pair (key_a < key_b) the index must return at this cutoff, with its score."""

    @abstractmethod
    def near(self, key: str, cutoff: Score) -> list[tuple[str, Score]]:
        """The rows near the row stored under `key`, in the index's order."""

    def effective(self, cutoff: Score | None) -> Score:
        return self.made.cutoff(**self.cutoff_argument(cutoff))

    def cutoff_argument(self, cutoff: Score | None) -> dict[str, Score | None]:
        """The cutoff as the library takes it: max_distance=k or min_similarity=s, by mode."""
        return {self.made.cutoff_column: cutoff}


def _in_table(conn: Conn, oracle: Oracle, placed: Placement) -> tuple[Index, dict[str, Sketch]]:
    """The oracle's rows written by an application into its own table (a text key, the sketch in
    a column of the index's type, rows without one too), and index "docs" attached to that column;
    on Citus, the table is distributed by its key first."""
    planned = oracle.spec.for_column().build("docs", DEFAULT_FEATURES, 4000)  # as attach_in_table plans it
    rows = oracle.rows(planned)
    conn.execute(
        sql.SQL("CREATE TABLE app_docs (id text PRIMARY KEY, sketch {}, note text)").format(
            sql.SQL(planned.column_type)
        )
    )
    if placed.kind == "distributed":
        conn.execute("SELECT create_distributed_table('app_docs', 'id', shard_count => 4)")
    with conn.cursor().copy("COPY app_docs (id, sketch) FROM STDIN") as copy:
        for key, value in rows.items():
            copy.write_row((key, planned.to_sql(value)))
        copy.write_row(("no_sketch_yet", None))
    made = app_column.attach_in_table(
        conn, "docs", "public.app_docs", "id", "sketch", spec=oracle.spec, expected_rows=4000
    )
    return made, rows


def _flip(rng: np.random.Generator, value: int, count: int, width: int) -> int:
    for bit in rng.choice(width, size=count, replace=False):
        value ^= 1 << int(bit)
    return value


def _words(values: list[int], width: int) -> np.ndarray:
    """Unsigned fingerprints as rows of 64-bit words, for vectorised Hamming distances."""
    return np.array(
        [[(v >> (64 * j)) & (2**64 - 1) for j in range(width // 64)] for v in values], dtype=np.uint64
    )


class SimhashOracle(Oracle):
    """3000 random 64-bit fingerprints plus 60 groups of near-copies at distances 0..k+1, and exact
    duplicates."""

    spec = SimhashSpec(max_distance=3)
    sql_near = "SELECT * FROM simdb.near('docs', %s, %s)"
    sql_near_key = "SELECT * FROM simdb.near_key('docs', %s, %s)"
    sql_pairs = "SELECT key_a, key_b, distance FROM simdb.pairs('docs', %s)"
    cutoffs = (None, 1, 0)
    too_far = 4
    probes = ("g0_base", "g7_d3", "g31_d4", "r17")
    perfect = 0
    described = "within 3 bits"
    unrelated = "r"

    def rows(self, made: Index) -> dict[str, Sketch]:
        rng = np.random.default_rng(5)
        width = made.bits
        rows: dict[str, Sketch] = {f"r{i}": v for i, v in enumerate(made.random_sketches(rng, 3000))}
        for group in range(60):
            base = int(made.random_sketches(rng, 1)[0])
            rows[f"g{group}_base"] = base
            rows[f"g{group}_same"] = base
            for distance in range(int(self.too_far) + 1):
                rows[f"g{group}_d{distance}"] = _flip(rng, base, distance, width)
        return rows

    def _distances(self, key: str) -> dict[str, int]:
        keys = list(self.stored)
        values = _words([int(self.stored[k]) for k in keys], self.made.bits)
        found = np.bitwise_count(values ^ _words([int(self.stored[key])], self.made.bits)).sum(axis=1)
        return {k: int(d) for k, d in zip(keys, found, strict=True)}

    def pairs(self, cutoff: Score) -> set[tuple[str, str, Score]]:
        keys = sorted(self.stored)
        values = _words([int(self.stored[key]) for key in keys], self.made.bits)
        found: set[tuple[str, str, Score]] = set()
        for i, value in enumerate(values):
            distances = np.bitwise_count(values[i + 1 :] ^ value).sum(axis=1)
            for j in np.nonzero(distances <= cutoff)[0]:
                found.add((keys[i], keys[i + 1 + int(j)], int(distances[j])))
        return found

    def near(self, key: str, cutoff: Score) -> list[tuple[str, Score]]:
        return sorted(
            ((k, d) for k, d in self._distances(key).items() if d <= cutoff),
            key=lambda item: (item[1], item[0]),
        )


class Simhash128Oracle(SimhashOracle):
    """The same plan on 128-bit fingerprints (bit(128) in SQL), at k = 6."""

    spec = SimhashSpec(max_distance=6, bits=128)
    cutoffs = (None, 3, 0)
    too_far = 7
    probes = ("g0_base", "g7_d6", "g31_d7", "r17")
    described = "within 6 bits"


class SimhashV3Oracle(SimhashOracle):
    """An index of fingerprint spec v3 (one-bit MinHash): the planted fingerprints, and the ones it
    makes of jaccard_corpus()'s documents, whose lightly edited copies fall within k."""

    spec = SimhashSpec(max_distance=3, fingerprint_spec=3)
    probes = ("g0_base", "g7_d3", "g31_d4", "r17", "d3", "d5_e02")

    def rows(self, made: Index) -> dict[str, Sketch]:
        texts = jaccard_corpus()
        sketches = zip(texts, made.sketches(list(texts.values())), strict=True)
        return {**super().rows(made), **{key: value for key, value in sketches if value is not None}}


class JaccardOracle(Oracle):
    """The MinHash signatures of jaccard_corpus(): a pair is near when it shares a band key and its
    estimated Jaccard reaches the cutoff."""

    spec = JaccardSpec(threshold=0.8)
    sql_near = "SELECT * FROM simdb.similar('docs', %s, %s)"
    sql_near_key = "SELECT * FROM simdb.similar_key('docs', %s, %s)"
    sql_pairs = "SELECT * FROM simdb.similar_pairs('docs', %s)"
    cutoffs = (None, 0.9, 1.0)
    too_far = 0.5
    probes = ("d0", "d1_e06", "d7_e12", "u3")
    perfect = 1.0
    described = "at similarity >= 0.8"
    unrelated = "u"

    def rows(self, made: Index) -> dict[str, Sketch]:
        return {key: made.sketch(text) for key, text in jaccard_corpus().items()}

    @functools.cached_property
    def bands(self) -> dict[str, list[int]]:
        assert isinstance(self.made, JaccardIndex)
        made = self.made
        return {key: made.band_keys(np.asarray(value)) for key, value in self.stored.items()}

    def _close(self, a: str, b: str, cutoff: Score) -> float | None:
        """The estimate of a and b if they share a band key and reach the cutoff, else None."""
        keys_a, keys_b = self.bands[a], self.bands[b]
        assert isinstance(self.made, JaccardIndex)
        similarity = self.made.similarity(np.asarray(self.stored[a]), np.asarray(self.stored[b]))
        shares = any(x == y for x, y in zip(keys_a, keys_b, strict=True))
        return similarity if shares and similarity >= cutoff else None

    def pairs(self, cutoff: Score) -> set[tuple[str, str, Score]]:
        keys = sorted(self.stored)
        found: set[tuple[str, str, Score]] = set()
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                similarity = self._close(a, b, cutoff)
                if similarity is not None:
                    found.add((a, b, similarity))
        return found

    def near(self, key: str, cutoff: Score) -> list[tuple[str, Score]]:
        close = ((other, self._close(key, other, cutoff)) for other in self.stored)
        return sorted(
            ((other, s) for other, s in close if s is not None), key=lambda item: (-item[1], item[0])
        )


class JaccardV1Oracle(JaccardOracle):
    """A jaccard index of signature spec v1 (verified on the signature itself) keeps its contract."""

    spec = JaccardSpec(threshold=0.8, signature_spec=1)


ORACLES = {
    "simhash": SimhashOracle,
    "simhash128": Simhash128Oracle,
    "simhash_v3": SimhashV3Oracle,
    "jaccard": JaccardOracle,
    "jaccard_v1": JaccardV1Oracle,
}


PLACEMENTS = {
    "local": LOCAL,
    "in_table": LOCAL,
    "citus": Distributed(shards=4),
    "citus_in_table": Distributed(shards=4),
    "citus_prefix": ByPrefix(shards=4),
}


@pytest.fixture(
    params=[
        pytest.param("local"),
        pytest.param("in_table"),
        pytest.param("citus", marks=pytest.mark.citus),
        pytest.param("citus_in_table", marks=pytest.mark.citus),
        pytest.param("citus_prefix", marks=pytest.mark.citus),
    ]
)
def conn(request: pytest.FixtureRequest) -> Iterator[Conn]:
    """A connection to a fresh database (local: simdb's own table; in_table: the rows in an
    application's table, storage.column), or to the Citus coordinator (citus; citus_in_table: the
    application's table distributed by its key; citus_prefix: Manku's layout, placement.ByPrefix)."""
    if request.param.startswith("citus"):
        citus: Conn = request.getfixturevalue("citus_conn")
        citus.execute("DROP TABLE IF EXISTS app_docs")
        yield citus
        citus.execute("DROP TABLE IF EXISTS app_docs CASCADE")
        return
    with psycopg.connect(request.getfixturevalue("dsn"), autocommit=True) as connection:
        yield connection


@pytest.fixture(params=list(ORACLES))
def oracle(request: pytest.FixtureRequest, conn: Conn) -> Oracle:
    where = request.node.callspec.params["conn"]
    return ORACLES[request.param](conn, PLACEMENTS[where], in_table=where.endswith("in_table"))


@pytest.mark.parametrize("step", [0, 1, 2])
def test_pairs_equal_brute_force_each_once(conn: Conn, oracle: Oracle, step: int) -> None:
    made, cutoff = oracle.made, oracle.cutoffs[step]
    found_pairs = list(duplicates.pairs(conn, made, **oracle.cutoff_argument(cutoff)))
    found = [(p.key_a, p.key_b, getattr(p, made.score_column)) for p in found_pairs]
    assert len(found) == len(set(found))  # pairs found by several tables or bands come back once
    expected = oracle.pairs(oracle.effective(cutoff))
    assert set(found) == expected and len(expected) >= 40  # the planted copies, not an empty answer
    assert all((p.similarity, p.distance) == made.scored(getattr(p, made.score_column)) for p in found_pairs)
    in_sql = conn.execute(oracle.sql_pairs, (cutoff,)).fetchall()
    assert len(in_sql) == len(expected) and set(in_sql) == expected


@pytest.mark.parametrize("step", [0, 1, 2])
def test_near_equals_brute_force(conn: Conn, oracle: Oracle, step: int) -> None:
    made, cutoff = oracle.made, oracle.cutoffs[step]
    for probe in oracle.probes:
        expected = oracle.near(probe, oracle.effective(cutoff))
        found = query.near(conn, made, oracle.stored[probe], **oracle.cutoff_argument(cutoff))
        assert [(m.key, getattr(m, made.score_column)) for m in found] == expected
        assert expected[0] == (probe, oracle.perfect)
        assert conn.execute(oracle.sql_near_key, (probe, cutoff)).fetchall() == expected
        sketch = made.to_sql(oracle.stored[probe])
        assert conn.execute(oracle.sql_near, (sketch, cutoff)).fetchall() == expected


def _components(pairs: Iterable[tuple[str, str, Score]]) -> list[list[str]]:
    neighbours: dict[str, set[str]] = {}
    for a, b, _ in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    seen: set[str] = set()
    groups = []
    for start in sorted(neighbours):
        if start in seen:
            continue
        stack, group = [start], []
        seen.add(start)
        while stack:
            key = stack.pop()
            group.append(key)
            for other in neighbours[key] - seen:
                seen.add(other)
                stack.append(other)
        groups.append(sorted(group))
    return sorted(groups)


def test_clusters_are_connected_components_stored_for_sql(conn: Conn, oracle: Oracle) -> None:
    made = oracle.made
    found = duplicates.clusters(conn, made)
    own = oracle.effective(None)
    assert found.cutoff == own and found.described == oracle.described
    assert found.groups == _components(oracle.pairs(own))
    assert all(len(group) >= 2 for group in found.groups)
    for group in found.groups:  # the copies of one planted document, never an unrelated row
        assert len({key.split("_")[0] for key in group}) == 1 and not group[0].startswith(oracle.unrelated)
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


def test_dedup_keeps_one_key_per_cluster(conn: Conn, oracle: Oracle) -> None:
    found = duplicates.clusters(conn, oracle.made)
    decisions = list(duplicates.dedup(conn, oracle.made, "first"))
    assert sum(d.keep for d in decisions) == len(found.groups)
    by_cluster: dict[int, list[str]] = {}
    for decision in decisions:
        by_cluster.setdefault(decision.cluster, []).append(decision.key)
    assert sorted(sorted(keys) for keys in by_cluster.values()) == found.groups


def test_a_cutoff_beyond_the_index_is_refused(conn: Conn, oracle: Oracle) -> None:
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
