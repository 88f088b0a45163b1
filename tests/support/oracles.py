"""The brute-force oracles every index is judged by: each mode's planted sketches and the answers a
pass over every stored row gives (near, all pairs, their connected components), and the plain
Hamming scans the faces' tests compare with. A new mode joins the contract by adding its Oracle
to ORACLES.
"""

from __future__ import annotations

import functools
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import ClassVar, TypeVar

import numpy as np
from psycopg import sql

from simdb import ingest
from simdb.follow import app_column, keep
from simdb.index import lifecycle as index
from simdb.index.modes import Index, JaccardIndex, JaccardSpec, SimhashSpec, Sketch, Spec
from simdb.index.placement import LOCAL, ByPrefix, Distributed, Placement
from simdb.sketch.features import DEFAULT_FEATURES
from support import WORDS, Conn, jaccard_corpus

K = TypeVar("K")


def hamming_near(sketches: Mapping[K, int], probe: int, k: int) -> list[tuple[K, int]]:
    """Every (key, distance) within k bits of `probe`, nearest first, then by key: a scan of all."""
    found = [(key, (value ^ probe).bit_count()) for key, value in sketches.items()]
    return sorted(((key, d) for key, d in found if d <= k), key=lambda row: (row[1], row[0]))  # type: ignore[type-var]


def hamming_pairs(sketches: Mapping[K, int], k: int) -> set[tuple[K, K, int]]:
    """Every pair (a < b) within k bits, with its distance: all pairs compared."""
    keys = sorted(sketches)  # type: ignore[type-var]
    return {
        (a, b, distance)
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if (distance := (sketches[a] ^ sketches[b]).bit_count()) <= k
    }


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

    def __init__(self, conn: Conn, placed: Placement, storage: str = "own") -> None:
        self.texts: dict[str, str] = {}  # a side table's: the application's texts, by key
        if storage == "column":
            self.made, self.stored = _in_table(conn, self, placed)
            return
        if storage == "side":
            self.texts = planted_texts()
            self.made = _side_table(conn, self, self.texts)
            self.stored = sketches(self.made, self.texts)
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


def planted_texts() -> dict[str, str]:
    """Texts an application's table holds: 60 documents of 60 words, each with copies that have
    0 to 7 words replaced (GROUP_dN), the 300-word documents of jaccard_corpus() with their
    edited copies, and 300 unrelated texts (keys r... and u...)."""
    rng = random.Random(8)
    texts = {}
    for group in range(60):
        words = [rng.choice(WORDS) for _ in range(60)]
        texts[f"g{group}_base"] = " ".join(words)
        for changed in range(8):
            copy = list(words)
            for position in rng.sample(range(len(copy)), changed):
                copy[position] = rng.choice(WORDS)
            texts[f"g{group}_d{changed}"] = " ".join(copy)
    texts.update(jaccard_corpus())
    for number in range(150):
        texts[f"r{number}"] = " ".join(rng.choice(WORDS) for _ in range(60))
    return texts


def sketches(made: Index, texts: Mapping[str, str]) -> dict[str, Sketch]:
    """What an index stores for each text (the texts without shingles have no row)."""
    return {key: made.sketch(text) for key, text in texts.items() if text.strip()}


def _side_table(conn: Conn, oracle: Oracle, texts: Mapping[str, str]) -> Index:
    """Index "docs" attached to an application's table of texts (keyed by text, with triggers),
    storage.side: its rows come in through a sync, which the oracle does not take on trust: its
    rows are each text's sketch, computed here."""
    conn.execute("CREATE TABLE app_docs (id text PRIMARY KEY, body text)")
    with conn.cursor().copy("COPY app_docs (id, body) FROM STDIN") as copy:
        for key, text in texts.items():
            copy.write_row((key, text))
    keep.attach(conn, "docs", "public.app_docs", "id", "body", spec=oracle.spec, expected_rows=4000)
    keep.first_sync(conn, "docs")
    return index.get(conn, "docs")


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


class SimhashCoveringOracle(SimhashOracle):
    """The same rows in an index whose B-trees carry the fingerprint (Index.covering): near checks
    candidates in the B-trees and looks up the rows it found (on one server)."""

    spec = SimhashSpec(max_distance=3, covering=True)


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
    "simhash_covering": SimhashCoveringOracle,
    "simhash128": Simhash128Oracle,
    "simhash_v3": SimhashV3Oracle,
    "jaccard": JaccardOracle,
    "jaccard_v1": JaccardV1Oracle,
}


PLACEMENTS = {
    "local": LOCAL,
    "in_table": LOCAL,
    "side": LOCAL,
    "citus": Distributed(shards=4),
    "citus_in_table": Distributed(shards=4),
    "citus_prefix": ByPrefix(shards=4),
}


def components(pairs: Iterable[tuple[str, str, Score]]) -> list[list[str]]:
    """The groups of keys that pairs connect (connected components), each sorted, in order."""
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
