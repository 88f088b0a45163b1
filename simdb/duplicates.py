"""Batch mode: all near-duplicate pairs, the clusters they form, and one representative per cluster."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql
from psycopg.pq import TransactionStatus

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter, PermissionDenied
from simdb.index import catalog, changes, names, rowscan
from simdb.index import lifecycle as indexes
from simdb.index.modes import Index
from simdb.query import check_size_ratio

KEEP_RULES = ("first", "last", "shortest", "longest")
_FETCH = 10_000


@dataclass(frozen=True)
class Pair:
    """Two near-duplicate keys (key_a < key_b): their distance (simhash) or similarity (jaccard)."""

    key_a: str
    key_b: str
    similarity: float | None
    distance: int | None = None


def pairs(
    conn: Connection,
    index: Index,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    same_extension: bool = False,
    size_ratio: float | None = None,
    jobs: int = 1,
    new_for: str | None = None,
) -> Generator[Pair, None, None]:
    """Every pair within the cutoff exactly once, streamed from a server-side cursor.

    The cutoff is `max_distance` bits on a simhash index, `min_similarity` on a jaccard one
    (each defaults to the index's own). `same_extension` and `size_ratio` (largest size at most
    R times the smallest) are cheap second filters on the stored extension and size. `jobs`
    threads pair the rows in memory (a table or band each at a time).

    With `new_for` (a consumer's name), only the pairs that involve a row added or changed since
    that consumer's last such run (every pair on its first, which starts tracking changes); its
    mark moves to this run's snapshot once every pair has been read (a run stopped before leaves
    it where it was: the next one reports those pairs again). That costs a near query per changed
    row while they are few, else a read of every row and a pass over them per table
    (_changed_pairs). Checks run at the call.
    """
    cutoff = index.cutoff(max_distance, min_similarity)
    conditions = _conditions(same_extension, size_ratio)
    if new_for is None:
        return _pairs(conn, index, cutoff, conditions, jobs)
    _start_tracking(conn, index)
    return _new_pairs(conn, index, new_for, cutoff, conditions, jobs)


def _pairs(
    conn: Connection, index: Index, cutoff: float, conditions: list[sql.Composable], jobs: int
) -> Generator[Pair, None, None]:
    """Every pair, in one transaction (repeatable read, where it is the connection's own)."""
    alone = conn.info.transaction_status == TransactionStatus.IDLE
    with conn.transaction():
        if alone:  # (in memory, rows are found by address: one snapshot for both statements)
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield from _all_pairs(conn, index, cutoff, conditions, in_memory=alone, jobs=jobs)


def _start_tracking(conn: Connection, index: Index) -> None:
    """What a run that reads only new pairs checks, and starts tracking changes where it is the first."""
    changes.check_trackable(index)
    if conn.info.transaction_status != TransactionStatus.IDLE:
        raise InvalidParameter(
            "new pairs are read in a transaction of their own (its snapshot becomes the mark)",
            "commit or roll back first, or use a connection in autocommit mode",
        )
    changes.check_writable(conn, index)
    if not changes.tracked(conn, index):
        changes.track(conn, index)


def _new_pairs(
    conn: Connection, index: Index, consumer: str, cutoff: float, conditions: list[sql.Composable], jobs: int
) -> Generator[Pair, None, None]:
    """The pairs of rows changed since the consumer's mark, and its new mark, in one repeatable
    read transaction."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        mark = catalog.pair_mark(conn, index.name, consumer)
        if mark is None:
            yield from _all_pairs(conn, index, cutoff, conditions, in_memory=True, jobs=jobs)
        else:
            yield from _changed_pairs(conn, index, mark, cutoff, conditions, jobs)
        catalog.set_pair_mark(conn, index.name, consumer)


def _changed_pairs(
    conn: Connection, index: Index, mark: str, cutoff: float, conditions: list[sql.Composable], jobs: int
) -> Iterator[Pair]:
    """The pairs that involve a row changed after `mark`, the cheaper way: a near query for each
    such row, or (many rows changed) every pair paired in memory and those of a changed row kept."""
    if changes.probing_pays(conn, index, mark):
        fresh, parameters = changes.fresh_pairs(index, mark, cutoff)
        yield from _stream(conn, index, _filtered(index, fresh, conditions), parameters)
        return
    either, values = changes.either_changed(mark)
    yield from _all_pairs(
        conn,
        index,
        cutoff,
        [*conditions, either],
        in_memory=True,
        values=values,
        jobs=jobs,
        fresh=changes.changed_rows(mark),
    )


def _conditions(same_extension: bool, size_ratio: float | None) -> list[sql.Composable]:
    """The second filters of a pair, over its rows a and b."""
    check_size_ratio(size_ratio)
    conditions: list[sql.Composable] = []
    if same_extension:
        conditions.append(sql.SQL("a.extension IS NOT DISTINCT FROM b.extension"))
    if size_ratio is not None:
        conditions.append(
            sql.SQL("greatest(a.size, b.size) <= {} * least(a.size, b.size)").format(sql.Literal(size_ratio))
        )
    return conditions


def _all_pairs(
    conn: Connection,
    index: Index,
    cutoff: float,
    conditions: list[sql.Composable],
    *,
    in_memory: bool,
    values: Sequence[object] = (),
    jobs: int = 1,
    fresh: rowscan.Where | None = None,
) -> Iterator[Pair]:
    """Every pair where the conditions (over rows a and b, with parameters `values`) hold, in the
    caller's transaction: paired in memory where the placement may and the transaction is
    repeatable read (`in_memory`; only the pairs of rows where `fresh` holds, if the mode can),
    else by the index's pairs function."""
    if in_memory and index.placement.pairs_on_client:
        found = index.pairs_in_memory(conn, cutoff, jobs, fresh)
        if found is not None:
            statement, batches = found
            extra = sql.SQL("").join(sql.SQL(" AND {}").format(c) for c in conditions)
            for parameters in batches:
                yield from _stream(conn, index, statement + extra, [*parameters, *values])
            return
    statement = sql.SQL("SELECT p.* FROM {}(%s) AS p").format(index.pairs_function)
    yield from _stream(conn, index, _filtered(index, statement, conditions), [cutoff, *values])


def _filtered(index: Index, statement: sql.Composed, conditions: list[sql.Composable]) -> sql.Composed:
    """A statement of pairs (aliased p) joined with their rows a and b where the conditions hold."""
    if not conditions:
        return statement
    rows = sql.SQL(" JOIN {t} AS a ON a.key = p.key_a JOIN {t} AS b ON b.key = p.key_b WHERE {c}")
    return statement + rows.format(t=index.table, c=sql.SQL(" AND ").join(conditions))


def _stream(conn: Connection, index: Index, statement: sql.Composed, parameters: list[Any]) -> Iterator[Pair]:
    """The pairs a statement returns (key_a, key_b, score), through a server-side cursor."""
    with conn.cursor(name=f"simdb_pairs_{index.name}") as cursor:
        cursor.itersize = _FETCH
        cursor.execute(statement, parameters)
        for key_a, key_b, score in cursor:
            yield Pair(key_a, key_b, *index.scored(score))


def export(conn: Connection, index: Index) -> Generator[tuple[str, str, int | None, str | None], None, None]:
    """Every row of the index, by key: key, sketch (as `simdb fingerprint` prints it, so it loads
    again with `ingest --fingerprint-field`), size and extension; streamed, in one snapshot."""
    statement = sql.SQL("SELECT key, {}, size, extension FROM {} ORDER BY key").format(
        sql.Identifier(index.sketch_column), index.table
    )
    with conn.transaction(), conn.cursor(name=f"simdb_export_{index.name}") as cursor:
        cursor.itersize = _FETCH
        cursor.execute(statement)
        for key, value, size, extension in cursor:
            yield key, index.spec.literal(index.from_sql(value)), size, extension


class _Components:
    """Union-find over keys, with path halving and union by size."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.size: dict[str, int] = {}

    def find(self, key: str) -> str:
        parent = self.parent
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def union(self, a: str, b: str) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return
        if self.size.get(root_a, 1) < self.size.get(root_b, 1):
            root_a, root_b = root_b, root_a
        self.parent[root_b] = root_a
        self.size[root_a] = self.size.get(root_a, 1) + self.size.get(root_b, 1)

    def groups(self) -> list[list[str]]:
        """The components with two or more keys, each sorted, ordered by their smallest key."""
        members: dict[str, list[str]] = {}
        for key in self.parent:
            members.setdefault(self.find(key), []).append(key)
        return sorted((sorted(group) for group in members.values() if len(group) > 1), key=lambda g: g[0])


@dataclass(frozen=True)
class Clusters:
    """Connected components of the near-duplicate graph (only keys with a near-duplicate)."""

    groups: list[list[str]]
    pairs: int
    cutoff: float  # the max distance (simhash) or min similarity (jaccard) of the pairs
    described: str  # the cutoff in words: "within 3 bits", "at similarity >= 0.8"
    cutoff_column: str  # what the cutoff is called: max_distance or min_similarity
    table: str  # where the clusters are stored: simdb.NAME__clusters
    merged: bool = False  # `pairs` are the new pairs merged into the clusters stored before

    @property
    def keys(self) -> int:
        return sum(len(group) for group in self.groups)

    def summary(self) -> str:
        largest = max((len(group) for group in self.groups), default=0)
        merged = " new pairs merged into the clusters stored" if self.merged else " pairs"
        return (
            f"{len(self.groups)} clusters of {self.keys} keys from {self.pairs}{merged} "
            f"{self.described} (largest: {largest} keys)"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "clusters": len(self.groups),
            "keys": self.keys,
            "pairs": self.pairs,
            self.cutoff_column: self.cutoff,
            "table": self.table,
            "merged": self.merged,
        }

    def lines(self) -> list[str]:
        return [f"{self.summary()}; stored in {self.table}"]


CLUSTERS_CONSUMER = "clusters"  # the mark of the stored clusters, which `clusters --new` merges into


def clusters(
    conn: Connection,
    index: Index,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    progress: Callable[[int], object] | None = None,
    new: bool = False,
    jobs: int = 1,
) -> Clusters:
    """Compute the clusters and store them in simdb."NAME__clusters" (key, cluster) for SQL joins.

    Cluster numbers start at 1, ordered by each cluster's smallest key. Keys without any
    near-duplicate are not listed. The table, whose third column records the cutoff
    (max_distance or min_similarity, by mode), is replaced in one transaction. `progress` is
    told of each pair as it is joined in.

    With `new`, the pairs that involve a row written since the clusters were stored (as pairs'
    `new_for` finds them) are merged into the stored clusters; the first such run computes them
    all and starts tracking changes. Merging only joins clusters: a row rewritten or removed
    since leaves its cluster at the next full run.
    """
    cutoff = index.cutoff(max_distance, min_similarity)
    check_clusters_writable(conn, index)
    if new:
        _start_tracking(conn, index)
    mine = conn.info.transaction_status == TransactionStatus.IDLE
    if not (mine and changes.tracked(conn, index)):  # (every run of an index that tracks no changes)
        found, count = groups(
            conn, index, max_distance, min_similarity=min_similarity, progress=progress, jobs=jobs
        )
        result = _clusters(index, found, count, cutoff)
        with conn.transaction():
            _store_clusters(conn, index, result)
        return result
    components, count = _Components(), 0
    with conn.transaction():  # one snapshot for the pairs, the clusters and the mark
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        mark = catalog.pair_mark(conn, index.name, CLUSTERS_CONSUMER)
        stored = _stored_clusters(conn, index, cutoff) if new and mark is not None else None
        if mark is None or stored is None:
            pairs_read: Iterator[Pair] = _all_pairs(conn, index, cutoff, [], in_memory=True, jobs=jobs)
        else:
            for group in stored:
                for key in group[1:]:
                    components.union(group[0], key)
            pairs_read = _changed_pairs(conn, index, mark, cutoff, [], jobs)
        for pair in pairs_read:
            components.union(pair.key_a, pair.key_b)
            count += 1
            if progress is not None:
                progress(1)
        result = _clusters(index, components.groups(), count, cutoff, merged=stored is not None)
        _store_clusters(conn, index, result)
        if new or mark is not None:  # (a full run refreshes the mark of clusters kept by --new)
            catalog.set_pair_mark(conn, index.name, CLUSTERS_CONSUMER)
    return result


def _clusters(
    index: Index, found: list[list[str]], count: int, cutoff: float, *, merged: bool = False
) -> Clusters:
    return Clusters(
        found,
        count,
        cutoff,
        index.describe_cutoff(cutoff),
        index.cutoff_column,
        names.clusters_table_name(index.name),
        merged=merged,
    )


def _stored_clusters(conn: Connection, index: Index, cutoff: float) -> list[list[str]] | None:
    """The clusters stored at this cutoff, each a list of keys; None where there are none."""
    if not indexes.has_clusters(conn, index.name):
        return None
    table, column = names.clusters_table(index.name), sql.Identifier(index.cutoff_column)
    row = conn.execute(sql.SQL("SELECT DISTINCT {} FROM {}").format(column, table)).fetchall()
    if row and [value for (value,) in row] != [cutoff]:
        return None
    rows = conn.execute(sql.SQL("SELECT array_agg(key) FROM {} GROUP BY cluster").format(table))
    return [list(keys) for (keys,) in rows]


def _store_clusters(conn: Connection, index: Index, found: Clusters) -> None:
    """The clusters into simdb."NAME__clusters", made beside the index's rows where it is missing,
    its rows replaced, in the caller's transaction."""
    table = names.clusters_table(index.name)
    column = sql.Identifier(index.cutoff_column)
    if not indexes.has_clusters(conn, index.name):  # placed beside the index's rows, joined on key
        conn.execute(
            sql.SQL(
                "CREATE TABLE {} (key text PRIMARY KEY, cluster integer NOT NULL, {} {} NOT NULL)"
            ).format(table, column, sql.SQL(index.cutoff_type))
        )
        index.placement.place(conn, table, beside=index.storage.colocation(index))
    conn.execute(sql.SQL("TRUNCATE {}").format(table))
    with conn.cursor().copy(sql.SQL("COPY {} (key, cluster, {}) FROM STDIN").format(table, column)) as copy:
        for number, group in enumerate(found.groups, start=1):
            for key in group:
                copy.write_row((key, number, found.cutoff))


def groups(
    conn: Connection,
    index: Index,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    progress: Callable[[int], object] | None = None,
    jobs: int = 1,
) -> tuple[list[list[str]], int]:
    """The clusters as `clusters` numbers them (each sorted, ordered by smallest key), and the
    count of pairs they came from, computed without storing anything (a reader may call it)."""
    components = _Components()
    count = 0
    for pair in pairs(conn, index, max_distance, min_similarity=min_similarity, jobs=jobs):
        components.union(pair.key_a, pair.key_b)
        count += 1
        if progress is not None:
            progress(1)
    return components.groups(), count


def check_clusters_writable(conn: Connection, index: Index) -> None:
    """Refuse, before any pair is computed, a role that may not store index NAME's clusters (a
    reader: `simdb grant` lets it query, not create tables), naming the role that may."""
    table = names.clusters_table_name(index.name)
    row = conn.execute(
        "SELECT current_user, pg_get_userbyid(c.relowner), to_regclass(%s) IS NOT NULL,"
        " CASE WHEN to_regclass(%s) IS NULL THEN has_schema_privilege(%s, 'CREATE')"
        " ELSE has_table_privilege(%s, 'INSERT') AND has_table_privilege(%s, 'TRUNCATE') END"
        " FROM pg_class AS c WHERE c.oid = %s::regclass",
        (table, table, names.SCHEMA, table, table, names.qualified(index.name)),
    ).fetchone()
    if row is None or row[3]:
        return
    role, owner, exists, _ = row
    needed = f"INSERT and TRUNCATE on {table}" if exists else f"CREATE on schema {names.SCHEMA}"
    raise PermissionDenied(
        f"role {role!r} cannot store the clusters of index {index.name!r}: that needs {needed}",
        f"run it as role {owner!r}, the index's owner, or a role granted that; "
        f"`simdb pairs {index.name}` lists the pairs without storing them",
    )


@dataclass(frozen=True)
class Decision:
    """Keep or drop one key of a cluster."""

    cluster: int
    key: str
    keep: bool


def dedup(
    conn: Connection,
    index: Index,
    keep: str,
    max_distance: int | None = None,
    *,
    min_similarity: float | None = None,
    progress: Callable[[int], object] | None = None,
) -> Generator[Decision, None, None]:
    """One representative per cluster by the rule `keep`; every other member is to be dropped.

    first/last: earliest/latest added (then first/last key); shortest/longest: fewest/most
    bytes (rows without a size come last), then key. `progress`: as for `clusters`. The rule,
    the cutoff and the role's rights are checked at once; the decisions come as they are read.
    """
    if keep not in KEEP_RULES:
        raise InvalidParameter(f"unknown keep rule {keep!r}", f"use one of {', '.join(KEEP_RULES)}")
    index.cutoff(max_distance, min_similarity)
    check_clusters_writable(conn, index)
    return _decisions(conn, index, keep, max_distance, min_similarity, progress)


def _decisions(
    conn: Connection,
    index: Index,
    keep: str,
    max_distance: int | None,
    min_similarity: float | None,
    progress: Callable[[int], object] | None,
) -> Generator[Decision, None, None]:
    found = clusters(conn, index, max_distance, min_similarity=min_similarity, progress=progress)
    if not found.groups:
        return
    for cluster, key, kept in conn.execute(
        _ranking(index, keep, sql.SQL("{} AS c").format(names.clusters_table(index.name)))
    ):
        yield Decision(cluster, key, kept)


def decide(conn: Connection, index: Index, keep: str, found: list[list[str]]) -> list[Decision]:
    """What `dedup --keep` decides for clusters computed by `groups` (numbered from 1 in their
    order), in dedup's order, by the same statement, without storing anything (a reader may)."""
    if keep not in KEEP_RULES:
        raise InvalidParameter(f"unknown keep rule {keep!r}", f"use one of {', '.join(KEEP_RULES)}")
    if not found:
        return []
    numbers = [number for number, group in enumerate(found, start=1) for _ in group]
    keys = [key for group in found for key in group]
    members = sql.SQL("unnest(%s::integer[], %s::text[]) AS c (cluster, key)")
    rows = conn.execute(_ranking(index, keep, members), (numbers, keys)).fetchall()
    return [Decision(cluster, key, kept) for cluster, key, kept in rows]


def _ranking(index: Index, keep: str, members: sql.Composable) -> sql.Composed:
    """Each member of the clusters in `members` (a relation c of cluster, key) with whether `keep`
    keeps it, ordered by cluster, the kept one first, then key."""
    order = {
        "first": sql.SQL("r.added_at, r.key"),
        "last": sql.SQL("r.added_at DESC, r.key DESC"),
        "shortest": sql.SQL("r.size NULLS LAST, r.key"),
        "longest": sql.SQL("r.size DESC NULLS LAST, r.key"),
    }[keep]
    return sql.SQL(  # (members first, ranked after: Citus ranks across shards on the coordinator)
        "WITH r AS MATERIALIZED (SELECT c.cluster, r.key, r.added_at, r.size FROM {members}"
        " JOIN {table} AS r ON r.key = c.key)"
        " SELECT r.cluster, r.key, row_number() OVER (PARTITION BY r.cluster ORDER BY {order}) = 1"
        " FROM r ORDER BY r.cluster, 3 DESC, r.key"
    ).format(order=order, members=members, table=index.table)
