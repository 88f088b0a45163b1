"""Looking at near-duplicates before dropping them (`simdb serve`): clusters with what `dedup`
would keep, two documents compared, a pasted text's near-duplicates, the pairs' scores, and a
calibration on a sample of the index's own texts.

Everything here reads and nothing writes, so that a reader role (`simdb grant`) can use it: the
clusters are computed as `simdb clusters` computes them (duplicates.groups) but not stored, and the
keep/drop decisions come from dedup's own statement (duplicates.decide).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from psycopg import sql

from simdb import duplicates, query
from simdb.db.connection import Connection
from simdb.errors import InputError, InvalidParameter
from simdb.index import texts
from simdb.index.modes import Index, Sketch
from simdb.measure import calibrate as calibration
from simdb.serve import compare
from simdb.sketch.features import EmptyDocument
from simdb.sources.readers import Document

SHOWN_CHARS = 100_000  # a document is shown (and diffed) up to this many characters


@dataclass(frozen=True)
class Member:
    """A key of a cluster: its size, whether `dedup` keeps it, and its score to the kept one."""

    key: str
    size: int | None
    keep: bool
    similarity: float | None
    distance: int | None


@dataclass(frozen=True)
class Cluster:
    """A cluster as `dedup` numbers it, the kept key (its representative) first."""

    number: int
    members: list[Member]

    @property
    def representative(self) -> Member:
        return self.members[0]


@dataclass(frozen=True)
class ClusterPage:
    """One page of the clusters of an index, largest first, under a keep rule."""

    clusters: list[Cluster]
    total: int  # clusters in all
    keys: int  # keys in all clusters
    pairs: int
    described: str  # the cutoff in words
    page: int
    pages: int
    keep: str


def decisions(
    conn: Connection,
    index: Index,
    keep: str,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
) -> list[duplicates.Decision]:
    """Exactly what `simdb dedup NAME --keep KEEP` prints, without storing the clusters."""
    found, _ = duplicates.groups(conn, index, max_distance, min_similarity=min_similarity)
    return duplicates.decide(conn, index, keep, found)


def cluster_page(
    conn: Connection,
    index: Index,
    keep: str,
    page: int = 1,
    per_page: int = 20,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
) -> ClusterPage:
    """Page `page` (from 1) of the clusters, largest first (then by number), each member with its
    size and its distance or estimated Jaccard to the key `keep` keeps."""
    if page < 1 or per_page < 1:
        raise InvalidParameter(f"page {page} of {per_page}", "pages count from 1")
    cutoff = index.cutoff(max_distance, min_similarity)
    found, pairs = duplicates.groups(conn, index, max_distance, min_similarity=min_similarity)
    decided = duplicates.decide(conn, index, keep, found)
    ordered = sorted(range(len(found)), key=lambda at: (-len(found[at]), at))
    pages = max(1, math.ceil(len(found) / per_page))
    if page > pages:
        raise InvalidParameter(f"page {page} of {pages}", f"give a page from 1 to {pages}")
    chosen = {at + 1 for at in ordered[(page - 1) * per_page : page * per_page]}
    members: dict[int, list[duplicates.Decision]] = {}
    for decision in decided:
        if decision.cluster in chosen:
            members.setdefault(decision.cluster, []).append(decision)
    rows = _rows(conn, index, [d.key for group in members.values() for d in group])
    shown = []
    for number in sorted(chosen, key=lambda n: (-len(found[n - 1]), n)):
        group = members.get(number, [])
        kept = next((d.key for d in group if d.keep), None)
        listed = []
        for decision in group:  # (dedup's order: the kept key first)
            score: tuple[float | None, int | None] = (None, None)
            if kept in rows and decision.key in rows:
                score = index.compared(rows[kept][0], rows[decision.key][0])
            listed.append(Member(decision.key, rows.get(decision.key, (0, None))[1], decision.keep, *score))
        shown.append(Cluster(number, listed))
    return ClusterPage(
        shown,
        len(found),
        sum(len(group) for group in found),
        pairs,
        index.describe_cutoff(cutoff),
        page,
        pages,
        keep,
    )


def _rows(conn: Connection, index: Index, keys: list[str]) -> dict[str, tuple[Sketch, int | None]]:
    """The sketch and size of each of these keys."""
    if not keys:
        return {}
    statement = sql.SQL("SELECT key, {}, size FROM {} WHERE key = ANY(%s)").format(
        sql.Identifier(index.sketch_column), index.table
    )
    return {key: (index.from_sql(value), size) for key, value, size in conn.execute(statement, (keys,))}


@dataclass(frozen=True)
class Side:
    """One document of a comparison: its key (None for a pasted text), its text and its runs."""

    key: str | None
    text: texts.Text
    runs: list[compare.Segment]


@dataclass(frozen=True)
class Comparison:
    """Two documents side by side: the index's score of the pair and the exact shingle Jaccard."""

    a: Side
    b: Side
    similarity: float | None
    distance: int | None
    jaccard: float | None  # of the texts as far as they were read; None without both texts


def compare_keys(conn: Connection, index: Index, key_a: str, key_b: str) -> Comparison:
    """Keys a and b of the index side by side; InputError if either is not one of its keys."""
    sketch_a = query.found_sketch(index, key_a, query.stored(conn, index, key_a))
    sketch_b = query.found_sketch(index, key_b, query.stored(conn, index, key_b))
    text_a = texts.read(conn, index, key_a, SHOWN_CHARS)
    text_b = texts.read(conn, index, key_b, SHOWN_CHARS)
    return _compared(index, key_a, text_a, key_b, text_b, index.compared(sketch_a, sketch_b))


def compare_text(conn: Connection, index: Index, text: str, key: str) -> Comparison:
    """A pasted text beside key `key` of the index."""
    stored = query.found_sketch(index, key, query.stored(conn, index, key))
    pasted = texts.Text("", text[:SHOWN_CHARS], "your text", len(text), len(text) > SHOWN_CHARS)
    return _compared(
        index,
        None,
        pasted,
        key,
        texts.read(conn, index, key, SHOWN_CHARS),
        index.compared(sketch(index, text), stored),
    )


def _compared(
    index: Index,
    key_a: str | None,
    text_a: texts.Text,
    key_b: str,
    text_b: texts.Text,
    score: tuple[float | None, int | None],
) -> Comparison:
    if text_a.text is not None and text_b.text is not None:
        runs_a, runs_b = compare.word_diff(text_a.text, text_b.text)
        jaccard = compare.shingle_jaccard(text_a.text, text_b.text, index.features)
    else:
        runs_a = [compare.Segment(text_a.text or "", False)]
        runs_b = [compare.Segment(text_b.text or "", False)]
        jaccard = None
    return Comparison(Side(key_a, text_a, runs_a), Side(key_b, text_b, runs_b), *score, jaccard)


def sketch(index: Index, text: str) -> Sketch:
    """A pasted text's sketch; InputError if it has no shingle."""
    try:
        return index.sketch(text)
    except EmptyDocument as error:
        raise InvalidParameter(
            f"the text has no shingles under features {index.features} ({error})", "paste a longer text"
        ) from error


def search(conn: Connection, index: Index, text: str, limit: int = 50) -> list[query.Match]:
    """The index's rows near a pasted text, nearest first, at most `limit`."""
    return query.near(conn, index, sketch(index, text), limit=limit)


@dataclass(frozen=True)
class Scores:
    """How many pairs of the index have each distance (simhash) or estimated Jaccard (jaccard,
    in steps of 0.01) within its cutoff."""

    counts: dict[float, int]
    kind: str  # "distance" or "similarity"
    cutoff: float


def pair_scores(conn: Connection, index: Index) -> Scores:
    """The scores of every pair within the index's own cutoff."""
    counts: Counter[float] = Counter()
    for pair in duplicates.pairs(conn, index):
        if pair.distance is not None:
            counts[pair.distance] += 1
        elif pair.similarity is not None:
            counts[round(pair.similarity, 2)] += 1
    return Scores(dict(counts), index.score_column, index.cutoff())


def sample_calibration(conn: Connection, index: Index, sample: int = 200) -> calibration.Calibration:
    """`simdb calibrate` on up to `sample` of the index's documents whose text can be reached (a
    fixed sample: the keys first by the MD5 of the key); InputError if fewer than two have one."""
    if not 2 <= sample <= 5000:
        raise InvalidParameter(f"sample of {sample}", "give 2 to 5000 documents")
    keys = [
        key
        for (key,) in conn.execute(
            sql.SQL("SELECT key FROM {} ORDER BY md5(key), key LIMIT %s").format(index.table), (sample,)
        )
    ]
    documents = []
    for key in keys:
        found = texts.read(conn, index, key, texts.READ_LIMIT)
        if found.text is not None:
            documents.append(Document(key, found.text, len(found.text)))
    if len(documents) < 2:
        raise InputError(
            f"index {index.name!r}: the texts of {len(documents)} of {len(keys)} sampled keys can be reached",
            "calibration needs texts: ingest files, or records with --keep-text",
        )
    return calibration.calibrate(documents, index.features, len(documents))
