"""The jaccard mode: MinHash signatures with an LSH B-tree per band, pairs at or above a threshold.

A jaccard index stores each row's key and sketch (bigint[], signed with the same bits): its
MinHash signature (v1), then a check of 64 words (v2); or, under signature spec v3, the
signature's band keys, then the check. Each band's B-tree is on the band's key: under v1 and v2
an expression of the signature (XOR of rotated values), under v3 the stored key itself. Either
way plain-SQL writers are found as simdb's own rows are, and no key is stored twice.

near: any band's key equal to the query sketch's (one bitmap scan per B-tree, OR-ed); the
candidates are verified (v1: the share of equal signature positions; v2, v3: the check's
differing bits) and kept at or above $2. pairs: each band's key joined with itself, candidate
pairs kept once and verified the same way.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self, cast

import numpy as np
import numpy.typing as npt
from psycopg import postgres, sql
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types.numeric import Int8

from simdb.db.connection import Connection
from simdb.errors import InvalidParameter
from simdb.index import rowscan
from simdb.index.modes.base import CUTOFF, SKETCH, Index, Sketch, Spec
from simdb.plan import pairing
from simdb.sketch.bits import BITS
from simdb.sketch.features import Content, Features
from simdb.sketch.minhash import (
    CHECK_BINS,
    CHECK_WORDS,
    COLUMN_SIGNATURE_SPEC,
    DEFAULT_PERMUTATIONS,
    DEFAULT_THRESHOLD,
    KEYED_SPEC,
    MINHASH_SPEC_VERSION,
    SIGNATURE_SPECS,
    Banding,
    UInt64Array,
    band_rotation,
    check_signature_spec,
    choose_banding,
    document_signature,
    document_signatures,
    from_stored,
    similarity,
    sketch_size,
    to_stored,
)

PAIRS_MIN_SIMILARITY = sql.SQL("$1")  # the only parameter of the pairs statement


@dataclass(frozen=True)
class JaccardSpec(Spec):
    """Pairs whose estimated Jaccard similarity reaches `threshold`, from signatures of
    `permutations` MinHash values; the LSH bands are chosen for the two. `signature_spec`: v2
    verifies candidates with a 4096-bit check, v1 with the signature itself; v3 (the default)
    stores the band keys in place of the signature, beside v2's check."""

    threshold: float = DEFAULT_THRESHOLD
    permutations: int = DEFAULT_PERMUTATIONS
    signature_spec: int | None = None  # None: the newest (MINHASH_SPEC_VERSION), or v2 in a column

    mode = "jaccard"

    @property
    def version(self) -> int:
        """The signature spec this spec's sketches follow."""
        return MINHASH_SPEC_VERSION if self.signature_spec is None else self.signature_spec

    def for_column(self) -> JaccardSpec:
        """An application's column keeps v2 sketches unless told otherwise: v3's band keys
        belong to one index's threshold, and the application computes them itself."""
        if self.signature_spec is not None:
            return self
        return dataclasses.replace(self, signature_spec=COLUMN_SIGNATURE_SPEC)

    def build(self, name: str, features: Features, expected_rows: int) -> JaccardIndex:
        banding = choose_banding(self.threshold, self.permutations)
        spec = check_signature_spec(self.version)
        return JaccardIndex(name, features, expected_rows, self.threshold, self.permutations, banding, spec)

    def sketch(self, content: Content, features: Features) -> UInt64Array:
        return document_signature(content, features, self.permutations, self.version, self.threshold)

    def sketches(self, contents: list[Content], features: Features) -> list[Sketch | None]:
        return list(document_signatures(contents, features, self.permutations, self.version, self.threshold))

    def literal(self, value: Sketch) -> str:
        """A PostgreSQL array of signed bigints, for simdb.similar('NAME', '{...}') or an INSERT."""
        return "{" + ",".join(map(str, to_stored(value))) + "}"


def _integer(word: object) -> int | None:
    """An integer from a JSON number or a decimal string, else None (booleans are not integers)."""
    if isinstance(word, bool):
        return None
    if isinstance(word, int):
        return word
    try:
        return int(str(word).strip())
    except ValueError:
        return None


def _shortened(text: str, limit: int = 60) -> str:
    """`text` for a message: whole up to `limit` characters, else cut at a comma and marked '...'."""
    if len(text) <= limit:
        return text
    cut = text.rfind(",", 0, limit)
    return text[: cut if cut > 0 else limit] + "..."


def bigint_array(values: npt.ArrayLike) -> list[int]:
    """A signature as a bigint[] parameter. Int8: psycopg then sends bigint[] (a plain list of
    large ints goes as numeric[], which the server must convert on every query: 0.3 ms of a 1 ms
    query here)."""
    return [Int8(v) for v in to_stored(values)]  # (Int8 is an int)


_INT8 = postgres.types["int8"]
_ARRAY_HEADER = struct.Struct("!iiIii")  # dimensions, has nulls, element type, length, lower bound
_ARRAY_CELL = np.dtype([("size", ">i4"), ("value", ">i8")])  # each element: its length (8), its value


class _SignatureDumper(Dumper):
    """bigint[] in PostgreSQL's binary array format, straight from a numpy int64 array: psycopg's
    list dumper makes a Python object of every element, which took 90% of the time a jaccard
    batch spent storing."""

    oid = _INT8.array_oid
    format = Format.BINARY

    def dump(self, obj: npt.NDArray[np.int64]) -> bytes:
        cells = np.empty(len(obj), dtype=_ARRAY_CELL)
        cells["size"], cells["value"] = _ARRAY_CELL["value"].itemsize, obj
        return _ARRAY_HEADER.pack(1, 0, _INT8.oid, len(obj), 1) + cells.tobytes()


def dump_numpy_signatures(cursor: AdaptContext) -> None:
    """Let this cursor's COPY take bigint[] values as numpy int64 arrays (on this cursor only)."""
    cursor.adapters.register_dumper(None, _SignatureDumper)


def band_column(number: int) -> str:
    """The band-key column of band `number`: b0, b1, ..."""
    return f"b{number}"


def _rotated(value: sql.Composable, bits: int) -> sql.Composable:
    """A signed bigint rotated left by `bits` (>> is arithmetic in SQL, hence the mask)."""
    if bits == 0:
        return value
    return sql.SQL("(({value} << {bits}) | (({value} >> {back}) & {mask}))").format(
        value=value,
        bits=sql.Literal(bits),
        back=sql.Literal(BITS - bits),
        mask=sql.Literal((1 << bits) - 1),
    )


def _band_xor(banding: Banding, value: Callable[[int], sql.Composable]) -> sql.Composable:
    """XOR of a band's values rotated by their row's band_rotation; value(row) is the row-th value."""
    return sql.SQL("({})").format(
        sql.SQL(" # ").join(_rotated(value(row), band_rotation(row)) for row in range(banding.rows))
    )


def band_key(banding: Banding, number: int, signature: sql.Composable) -> sql.Composable:
    """SQL expression of band `number`'s key of a signature (a bigint[] expression)."""
    return _band_xor(
        banding,
        lambda row: sql.SQL("({})[{}]").format(signature, sql.Literal(number * banding.rows + row + 1)),
    )


def band_keys_array(banding: Banding, signature: sql.Composable) -> sql.Composed:
    """SQL expression of all band keys of a signature (a bigint[] expression) as one bigint[], in
    band order: band_key's values, from one band's expression evaluated once per band.

    For a query's signature, computed once: the keys written out as band_key expressions are
    some 700 operators, and the executor sets each one up anew at every execution (looking it up
    and checking the right to call it), which cost more than the rest of a near query.
    """
    band = sql.SQL("g.b")
    value = _band_xor(
        banding,
        lambda row: sql.SQL("({})[{} * {} + {}]").format(
            signature, band, sql.Literal(banding.rows), sql.Literal(row + 1)
        ),
    )
    return sql.SQL("ARRAY(SELECT {} FROM generate_series(0, {}) AS g(b) ORDER BY g.b)").format(
        value, sql.Literal(banding.bands - 1)
    )


def estimate(a: sql.Composable, b: sql.Composable, permutations: int) -> sql.Composed:
    """Signature spec v1: simdb.jaccard_estimate(a, b) for signatures of known length, written
    out in the statement.

    The same value as the function (tested), without a function call per candidate: a SQL
    function with a subquery is never inlined, and its set-up costs more than the comparison.
    """
    return sql.SQL(
        "((SELECT count(*) FROM generate_series(1, {n}) AS i WHERE {a}[i] = {b}[i])::double precision / {n})"
    ).format(a=a, b=b, n=sql.Literal(permutations))


def check_estimate(a: sql.Composable, b: sql.Composable, first: int) -> sql.Composed:
    """Signature specs v2 and v3: 1 - (differing bits of the two checks, the CHECK_WORDS values
    from position `first`) / 2048, at least 0 (the value minhash.check_similarity computes, to
    the last bit)."""
    return sql.SQL(
        "greatest(0, 1 - (SELECT sum(bit_count(({a}[i] # {b}[i])::bit(64)))"
        " FROM generate_series({first}, {last}) AS i)::double precision / {half})"
    ).format(
        a=a,
        b=b,
        first=sql.Literal(first),
        last=sql.Literal(first + CHECK_WORDS - 1),
        half=sql.Literal(CHECK_BINS // 2),
    )


@dataclass(frozen=True)
class JaccardIndex(Index):
    """MinHash signatures with LSH band-key columns; pairs at or above a Jaccard threshold."""

    threshold: float
    permutations: int
    banding: Banding
    signature_spec: int = MINHASH_SPEC_VERSION

    mode = "jaccard"
    spec_versions = SIGNATURE_SPECS
    sketch_column = "signature"
    score_column, score_type = "similarity", "double precision"
    cutoff_column, cutoff_type = "min_similarity", "double precision"

    @property
    def sketch_type(self) -> str:
        return "int8[]"

    @property
    def column_type(self) -> str:
        return "bigint[]"

    @property
    def spec(self) -> JaccardSpec:
        return JaccardSpec(self.threshold, self.permutations, self.signature_spec)

    @property
    def spec_version(self) -> int:
        return self.signature_spec

    def sketch_check(self, sketch: sql.Composable) -> sql.Composable:
        """A signature of another length (say v1's 128 values on a v2 index) is refused, not
        compared position by position into an empty answer."""
        size = sql.SQL("cardinality({})").format(sketch)
        return self._refusal(
            sql.SQL("{} IS DISTINCT FROM {}").format(size, sql.Literal(self.sketch_size)),
            sql.SQL("{} || ' values'").format(size),
            f"signatures of {self.sketch_size} values (spec v{self.signature_spec})",
        )

    def upgraded(self) -> Self | None:
        """Each newer signature spec stores other sketches under other B-trees (v2 longer ones
        verified by other SQL, v3 band keys in place of the signature), so an older index is not
        moved in place: a new index is made beside it."""
        if self.signature_spec == MINHASH_SPEC_VERSION:
            return None
        newest = MINHASH_SPEC_VERSION
        raise InvalidParameter(
            f"jaccard index {self.name!r} keeps signature spec v{self.signature_spec}: v{newest} stores "
            "other sketches under other B-trees and cannot replace them in place",
            f"attach or ingest the same sources into a new index (it gets v{newest}), "
            f"then drop {self.name!r}",
        )

    @property
    def sketch_size(self) -> int:
        """Values of a stored sketch: the signature or the band keys (v3), then the check's words."""
        return sketch_size(self.signature_spec, self.permutations, self.banding)

    def estimate(self, a: sql.Composable, b: sql.Composable) -> sql.Composed:
        """The Jaccard similarity two sketches estimate, in SQL, as this index verifies a
        candidate: the share of equal signature positions (v1), or the checks' differing bits."""
        if self.signature_spec == 1:
            return estimate(a, b, self.permutations)
        return check_estimate(a, b, self.sketch_size - CHECK_WORDS + 1)

    def similarity(self, a: UInt64Array, b: UInt64Array) -> float:
        """The Jaccard similarity two sketches of this index estimate, as its SQL verifies it."""
        return similarity(a, b, self.permutations, self.signature_spec)

    def compared(self, a: Sketch, b: Sketch) -> tuple[float, None]:
        """The estimated Jaccard of two signatures, as the index's SQL computes it."""
        return self.similarity(cast(UInt64Array, a), cast(UInt64Array, b)), None

    @property
    def summary(self) -> str:
        return (
            f"threshold {self.threshold:g}, {self.permutations} permutations, "
            f"{self.banding.bands} bands of {self.banding.rows} rows"
        )

    @property
    def finds(self) -> str:
        estimate = f"{self.permutations} MinHash values"
        return f"finds pairs at Jaccard >= {self.threshold:g} (as {estimate} estimate it)"

    def parameters(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "permutations": self.permutations,
            "bands": self.banding.bands,
            "band_rows": self.banding.rows,
        }

    def catalog_values(self, conn: Connection) -> dict[str, object]:
        return {**self.parameters(), "near_sql": self.near_statement().as_string(conn)}

    @classmethod
    def from_row(cls, row: Mapping[str, Any], block_orders: list[list[int]]) -> Self:
        cls.check_stored(row)
        banding = Banding(row["bands"], row["band_rows"])
        features = Features.parse(row["features"])
        return cls(
            row["name"],
            features,
            row["expected_rows"],
            row["threshold"],
            row["permutations"],
            banding,
            row["spec_version"],
        )

    def to_sql(self, value: Sketch) -> list[int]:
        return bigint_array(self._checked(value))

    def copy_sketches(self, cursor: AdaptContext) -> Callable[[Sketch], object]:
        dump_numpy_signatures(cursor)
        return lambda value: self._checked(value).view(np.int64)

    def _checked(self, value: Sketch) -> UInt64Array:
        values = np.asarray(value, dtype=np.uint64)
        if values.shape != (self.sketch_size,):
            raise InvalidParameter(
                f"a signature of {values.size} values for index {self.name!r}, whose signatures "
                f"(spec v{self.signature_spec}, {self.permutations} permutations) have {self.sketch_size}",
                "compute signatures with the index's own settings",
            )
        return values

    def from_sql(self, value: Any) -> UInt64Array:
        return from_stored(value)

    def parse_given(self, value: object) -> UInt64Array:
        """A signature as `simdb fingerprint --mode jaccard` prints it (a string '{1,-2,...}') or
        as a JSON list of integers, of the index's length (its spec and permutations)."""
        words: list[object] = []
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            words = [word for word in value[1:-1].split(",") if word.strip()]
        elif isinstance(value, list):
            words = value
        numbers = [_integer(word) for word in words]
        if not numbers or any(n is None or not -(2**63) <= n < 2**64 for n in numbers):
            raise InvalidParameter(
                f"bad signature {_shortened(str(value))!r}",
                "give a list of integers, or '{...}' as `simdb fingerprint --mode jaccard` prints it",
            )
        signature = np.array([n % 2**64 for n in numbers if n is not None], dtype=np.uint64)
        self.to_sql(signature)  # refuses a signature of another length
        return signature

    def random_sketches(self, rng: np.random.Generator, count: int) -> list[Sketch]:
        return list(rng.integers(0, 2**64, size=(count, self.sketch_size), dtype=np.uint64))

    def checked_similarity(self, min_similarity: float | None) -> float:
        """The similarity to search for: the index's threshold by default, up to 1."""
        if min_similarity is None:
            return self.threshold
        if not 0 < min_similarity <= 1:
            raise InvalidParameter(
                f"min similarity {min_similarity} is not a Jaccard similarity",
                f"give a value from {self.threshold:g} (the index's threshold) to 1",
            )
        if min_similarity < self.threshold:
            raise InvalidParameter(
                f"min similarity {min_similarity} is outside {self.threshold:g}..1 for index {self.name!r}",
                "a jaccard index finds pairs at or above the threshold it was created with; "
                f"create one with --threshold {min_similarity} for lower",
            )
        return min_similarity

    def cutoff(self, max_distance: int | None = None, min_similarity: float | None = None) -> float:
        if max_distance is not None:
            raise self.refuse("a Hamming distance", "it searches by Jaccard similarity: give --threshold")
        return self.checked_similarity(min_similarity)

    def describe_cutoff(self, cutoff: float) -> str:
        return f"at similarity >= {cutoff:g}"

    def scored(self, score: float) -> tuple[float, None]:
        """The estimated Jaccard similarity; no distance."""
        return float(score), None

    @property
    def columns(self) -> list[str]:
        """One name per band's B-tree: b0, b1, ..."""
        return [band_column(number) for number in range(self.banding.bands)]

    def sketch_definition(self) -> sql.Composable:
        """The sketch, checked to be a plain 1-based array of `sketch_size` non-NULL values."""
        column = sql.Identifier(self.sketch_column)
        return sql.SQL(
            "{c} bigint[] NOT NULL CHECK (array_ndims({c}) = 1 AND array_lower({c}, 1) = 1"
            " AND cardinality({c}) = {n} AND array_position({c}, NULL) IS NULL)"
        ).format(c=column, n=sql.Literal(self.sketch_size))

    def btree_keys(self, sketch: sql.Composable) -> list[sql.Composable]:
        """Each band's key of a sketch: a stored value (v3), or an expression of the signature."""
        if self.signature_spec == KEYED_SPEC:
            return [sql.SQL("({})[{}]").format(sketch, sql.Literal(n + 1)) for n in range(self.banding.bands)]
        return [band_key(self.banding, number, sketch) for number in range(self.banding.bands)]

    def band_keys(self, sketch: UInt64Array) -> list[int]:
        """The unsigned key of each band of a sketch, as its B-trees hold them."""
        if self.signature_spec == KEYED_SPEC:
            return [int(key) for key in sketch[: self.banding.bands]]
        return self.banding.keys(sketch)

    def query_key(self, sketch: sql.Composable, number: int) -> sql.Composable:
        """Band `number`'s key of the query sketch in table_near_statement: a value of the
        sketch (v3), or one of the keys its CTE q computed once."""
        if self.signature_spec == KEYED_SPEC:
            return self.btree_keys(sketch)[number]
        return sql.SQL("(SELECT q.k[{}] FROM q)").format(sql.Literal(number + 1))

    def query_keys(self, sketch: sql.Composable) -> sql.Composable:
        """The query's band keys for its CTE q: none to compute under v3, else band_keys_array."""
        if self.signature_spec == KEYED_SPEC:
            return sql.SQL("NULL::bigint[]")
        return band_keys_array(self.banding, sketch)

    nearest_first = sql.SQL("ORDER BY 2 DESC, 1")

    def score(self, stored: sql.Composable, query: sql.Composable) -> sql.Composable:
        return self.estimate(stored, query)

    def keeps(self, score: sql.Composable, cutoff: sql.Composable) -> sql.Composable:
        return sql.SQL("{} >= {}").format(score, cutoff)

    def table_near_statement(
        self, sketch: sql.Composable = SKETCH, cutoff: sql.Composable = CUTOFF
    ) -> sql.Composed:
        """SELECT key, similarity of the rows sharing a band with signature `sketch` and estimated
        >= `cutoff`: any band's key equal (one bitmap scan of each B-tree, OR-ed), then the estimate
        on the row. The query's signature and band keys are read once, into a CTE that the scans
        and the estimate read: a parameter subscripted in each scan's condition and for each
        candidate costs more than the scans (in a generic plan, every subscript fetches it). The
        keys come from one band's expression run for each band (band_keys_array), not from 16
        band_key expressions: some 45 operators to set up per execution instead of some 700.
        Under v3 the keys are the sketch's first values, each subscripted once, by its scan."""
        stored = sql.SQL("r.{}").format(sql.Identifier(self.sketch_column))
        return sql.SQL(
            "WITH q AS MATERIALIZED (SELECT {sketch} AS s, {keys} AS k)"
            " SELECT c.key, c.similarity FROM (SELECT r.key, {similarity} AS similarity FROM {table} AS r, q"
            " WHERE ({probes}) AND {check} OFFSET 0) AS c WHERE c.similarity >= {wanted}"
            " ORDER BY c.similarity DESC, c.key"
        ).format(
            sketch=sketch,
            keys=self.query_keys(sketch),
            check=self.sketch_check(sketch),
            similarity=self.estimate(stored, sql.SQL("q.s")),
            table=self.table,
            probes=sql.SQL(" OR ").join(
                sql.SQL("{} = {}").format(row, self.query_key(sketch, number))
                for number, row in enumerate(self.btree_keys(stored))
            ),
            wanted=cutoff,
        )

    def pairs_in_memory(
        self, conn: Connection, cutoff: float, jobs: int = 1, fresh: rowscan.Where | None = None
    ) -> tuple[sql.Composed, Iterator[list[Any]]] | None:
        """Rows sharing a band key found by sorting each band's keys; each candidate pair's rows
        then read once and estimated in SQL (one batch). Every pair, fresh or not."""
        rows = self.placement.read_rows(conn, self.table, self.btree_keys(sql.SQL("r.signature")))
        first, second = pairing.sharing(rows.values, jobs)
        estimate = self.estimate(sql.SQL("a.signature"), sql.SQL("b.signature"))
        keep = sql.SQL("s.score >= %s")
        statement = self.placement.pairs_of(self.table, estimate, keep)
        return statement, iter([[rows.at(first), rows.at(second), cutoff]])

    def pairs_statement(self, rows: sql.Composable) -> sql.Composed:
        """SELECT key_a, key_b, similarity of every pair sharing a band and estimated >= $1, once:
        each band's key joined with itself, then both rows read once per pair."""
        x, y = sql.SQL("x.signature"), sql.SQL("y.signature")
        joins = sql.SQL(" UNION ").join(
            sql.SQL(
                "SELECT x.key AS a, y.key AS b FROM {table} AS x JOIN {table} AS y ON {left} = {right}"
                " AND x.key < y.key"
            ).format(table=rows, left=left, right=right)
            for left, right in zip(self.btree_keys(x), self.btree_keys(y), strict=True)
        )
        return sql.SQL(
            "SELECT c.key_a, c.key_b, c.similarity FROM (SELECT p.a AS key_a, p.b AS key_b,"
            " {similarity} AS similarity"
            " FROM ({joins}) AS p JOIN {table} AS a ON a.key = p.a JOIN {table} AS b ON b.key = p.b"
            " OFFSET 0) AS c WHERE c.similarity >= {wanted}"
        ).format(
            similarity=self.estimate(sql.SQL("a.signature"), sql.SQL("b.signature")),
            joins=joins,
            table=rows,
            wanted=PAIRS_MIN_SIMILARITY,
        )
