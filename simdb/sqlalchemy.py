"""SQLAlchemy 2 helpers: fingerprint and signature column types and SQL expressions for simdb's
functions.

from simdb.sqlalchemy import Fingerprint, hamming, near, similar

class Article(Base):
    fingerprint: Mapped[int] = mapped_column(Fingerprint)   # unsigned in Python, bigint in SQL
    wide: Mapped[int] = mapped_column(Fingerprint128)        # 128 bits, bit(128) in SQL

dups = near("articles_dups", fingerprint_of_doc, 3)                # a simhash index
wide = near("articles_wide", wide_fingerprint, 10, bits=128)       # a 128-bit one
select(Article.title, dups.c.distance).join(dups, cast(Article.id, Text) == dups.c.key)
alike = similar("articles_alike", document_signature(text), 0.9)   # a jaccard index

An index in the model's own column (simdb attach --fingerprint-column), searched through its B-trees:

class Article(Base):
    fingerprint: Mapped[int | None] = mapped_column(Fingerprint(max_distance=3, blocks=4))

simhash_indexes(Article.fingerprint, "articles_dups")    # its B-trees, in the model's MetaData
select(Article).where(Article.fingerprint.near(fingerprint_of_doc, 3))
select(Article.id, Article.fingerprint.hamming_distance(fingerprint_of_doc))
signature: Mapped[Any] = mapped_column(Signature(threshold=0.8))     # a jaccard index's column
select(Doc).where(Doc.signature.similar(document_signature(text), 0.9)) # jaccard_indexes(...) too
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from psycopg import sql
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Dialect,
    Double,
    Index,
    Integer,
    Table,
    Text,
    and_,
    column,
    func,
    literal,
    literal_column,
    or_,
)
from sqlalchemy.dialects.postgresql import ARRAY, BIT
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnClause
from sqlalchemy.sql.expression import TableValuedAlias
from sqlalchemy.sql.visitors import InternalTraversal
from sqlalchemy.types import TypeDecorator, TypeEngine

from simdb.db.bit_string import BitString
from simdb.errors import InvalidParameter
from simdb.index import names
from simdb.index.modes import Index as SimdbIndex
from simdb.index.modes import JaccardIndex, JaccardSpec, SimhashIndex, SimhashSpec
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS
from simdb.sketch.bits import to_signed, to_unsigned
from simdb.sketch.features import DEFAULT_FEATURES
from simdb.sketch.minhash import (
    COLUMN_SIGNATURE_SPEC,
    DEFAULT_PERMUTATIONS,
    DEFAULT_THRESHOLD,
    UInt64Array,
    from_stored,
    to_stored,
)

Planned = TypeVar("Planned", SimhashIndex, JaccardIndex)
_SLOTS = tuple(sql.Identifier(f"__simdb_{number}__") for number in range(2))
_SLOT = re.compile(r'"__simdb_(\d)__"')


class _Template(ColumnElement[Any]):
    """SQL of simdb's simhash mode (a B-tree's key, a distance) around SQLAlchemy expressions.
    The mode's constants stay literal in the statement, so that a query repeats an index's
    expression exactly, also as a prepared statement (asyncpg's) or a generic plan."""

    __visit_name__ = "simdb_template"
    inherit_cache = True
    _traverse_internals = [  # noqa: RUF012 (SQLAlchemy's own declaration is a list)
        ("text", InternalTraversal.dp_string),
        ("elements", InternalTraversal.dp_clauseelement_tuple),
    ]

    def __init__(self, text: str, elements: tuple[ColumnElement[Any], ...], type_: TypeEngine[Any]) -> None:
        self.text, self.elements, self.type = text, elements, type_


@compiles(_Template)
def _compile_template(element: _Template, compiler: SQLCompiler, **kw: Any) -> str:
    """The text with each slot replaced by its element; a parameter or expression in parentheses
    (a cast parameter followed by a subscript would read as an array type), a column as it is."""

    def slot(number: int) -> str:
        filled = element.elements[number]
        text = compiler.process(filled, **kw)
        return text if isinstance(filled, ColumnClause) else f"({text})"

    pieces = _SLOT.split(element.text)
    return "".join(slot(int(piece)) if number % 2 else piece for number, piece in enumerate(pieces))


def _keys(index: SimdbIndex, sketch: ColumnElement[Any]) -> list[ColumnElement[int]]:
    """Each B-tree's key of `sketch` (a column or a probe), as the simhash mode writes it."""
    return [_Template(key.as_string(None), (sketch,), BigInteger()) for key in index.btree_keys(_SLOTS[0])]


def _distance(index: SimhashIndex, a: ColumnElement[Any], b: ColumnElement[Any]) -> ColumnElement[int]:
    return _Template(index.width.distance(_SLOTS[0], _SLOTS[1]).as_string(None), (a, b), Integer())


@functools.lru_cache(maxsize=64)
def simhash_plan(
    max_distance: int = 3,
    blocks: int | None = None,
    expected_rows: int = DEFAULT_EXPECTED_ROWS,
    bits: int = 64,
) -> SimhashIndex:
    """The B-trees simdb plans for a simhash index with these settings (those `simdb attach`
    takes: --max-distance, --blocks, --expected-rows, --bits); give `blocks` to be sure."""
    return SimhashSpec(max_distance, blocks, bits=bits).build("sqlalchemy", DEFAULT_FEATURES, expected_rows)


def _settings(
    column: ColumnElement[Any], kind: Any, index: Planned | None, method: str, declared: str
) -> Planned:
    """The index whose B-trees a column's method uses: the one given, else the column type's
    settings, named after the column (what errors call it: articles.fp)."""
    if index is not None:
        return index
    own: Planned | None = getattr(kind, "plan", None)
    if own is None:
        raise InvalidParameter(
            f"the type of column {column} has no index settings, so {method} cannot use its B-trees",
            f"declare the column as {declared} as the index was attached,"
            " or pass index=simdb.index.get(conn, NAME)",
        )
    return dataclasses.replace(own, name=str(column))


class _Comparator(TypeDecorator.Comparator[int]):
    """Methods of a fingerprint column: near (a predicate through the index's B-trees) and
    hamming_distance."""

    def _plan(self, index: SimhashIndex | None) -> SimhashIndex:
        return _settings(self.expr, self.type, index, "near()", "Fingerprint(max_distance=3, blocks=...)")

    def near(
        self, fingerprint: Any, max_distance: int | None = None, *, index: SimhashIndex | None = None
    ) -> ColumnElement[bool]:
        """Rows within max_distance bits (default and largest: the index's): some B-tree's key of
        the row equal to the fingerprint's (one index scan each, OR-ed), then the distance."""
        chosen = self._plan(index)
        k = chosen.checked_distance(max_distance)
        probe = _fingerprint(fingerprint, chosen.bits)
        probes = [
            row == given for row, given in zip(_keys(chosen, self.expr), _keys(chosen, probe), strict=True)
        ]
        return and_(or_(*probes), _distance(chosen, self.expr, probe) <= literal_column(str(k)))

    def hamming_distance(self, fingerprint: Any) -> ColumnElement[int]:
        """The number of differing bits between the column and a fingerprint (or another column)."""
        bits: int = getattr(self.type, "bits", 64)
        return _distance(simhash_plan(bits=bits), self.expr, _fingerprint(fingerprint, bits))


class _Indexed:
    """The settings of the simhash index in a fingerprint column (none: near() needs index=)."""

    bits: int

    def __init__(
        self,
        max_distance: int | None = None,
        blocks: int | None = None,
        expected_rows: int = DEFAULT_EXPECTED_ROWS,
    ) -> None:
        super().__init__()
        self.max_distance, self.blocks, self.expected_rows = max_distance, blocks, expected_rows

    @property
    def plan(self) -> SimhashIndex | None:
        if self.max_distance is None:
            return None
        return simhash_plan(self.max_distance, self.blocks, self.expected_rows, self.bits)


class Fingerprint(_Indexed, TypeDecorator[int]):
    """An unsigned 64-bit fingerprint in Python, stored as PostgreSQL bigint (same bits). With the
    settings the column's simhash index was attached with (max_distance, blocks or expected_rows),
    `column.near(fp, k)` is a predicate that uses its B-trees."""

    impl = BigInteger
    cache_ok = True
    comparator_factory = _Comparator
    bits = 64

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_signed(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_unsigned(value)


class Fingerprint128(_Indexed, TypeDecorator[int]):
    """An unsigned 128-bit fingerprint in Python, stored as PostgreSQL bit(128)."""

    impl = BIT(128)
    cache_ok = True
    comparator_factory = _Comparator
    bits = 128

    def process_bind_param(self, value: int | None, dialect: Dialect) -> BitString | None:
        return None if value is None else BitString(value, 128)

    def process_result_value(self, value: str | None, dialect: Dialect) -> int | None:
        return None if value is None else int(value, 2)


FINGERPRINT_TYPES: dict[int, type[TypeDecorator[int]]] = {64: Fingerprint, 128: Fingerprint128}


def _fingerprint(value: Any, bits: int) -> ColumnElement[int]:
    """A Python int becomes a bound parameter of the width's type; a column or expression stays."""
    return literal(value, FINGERPRINT_TYPES[bits]()) if isinstance(value, int) else value


def hamming(a: Any, b: Any, bits: int = 64) -> ColumnElement[int]:
    """The number of differing bits (columns, expressions or unsigned ints): simdb.hamming(a, b),
    or bit_count(a # b) for bit(128) fingerprints."""
    left, right = _fingerprint(a, bits), _fingerprint(b, bits)
    if bits == 64:
        return func.simdb.hamming(left, right, type_=Integer)
    return func.bit_count(left.op("#")(right), type_=Integer)


def near(index: str, fingerprint: Any, max_distance: int | None = None, bits: int = 64) -> TableValuedAlias:
    """simdb.near(index, fingerprint, k) as a table (key text, distance integer) to join with models;
    `bits=128` for an index of 128-bit fingerprints."""
    function = func.simdb.near(index, _fingerprint(fingerprint, bits), max_distance)
    return function.table_valued(column("key", Text), column("distance", Integer)).alias("near")


def near_key(index: str, key: str, max_distance: int | None = None) -> TableValuedAlias:
    """simdb.near_key(index, key, k): the rows near a stored row, as a table (key, distance)."""
    function = func.simdb.near_key(index, key, max_distance)
    return function.table_valued(column("key", Text), column("distance", Integer)).alias("near_key")


@functools.lru_cache(maxsize=64)
def jaccard_plan(
    threshold: float, permutations: int = DEFAULT_PERMUTATIONS, signature_spec: int = COLUMN_SIGNATURE_SPEC
) -> JaccardIndex:
    """The band B-trees simdb plans for a jaccard index with these settings (those `simdb attach
    --mode jaccard` takes: --threshold, --permutations, --signature-spec)."""
    spec = JaccardSpec(threshold, permutations, signature_spec)
    return spec.build("sqlalchemy", DEFAULT_FEATURES, DEFAULT_EXPECTED_ROWS)


class _SignatureComparator(TypeDecorator.Comparator[UInt64Array]):
    """Methods of a signature column: similar (a predicate through the index's band B-trees) and
    jaccard_estimate."""

    def _plan(self, index: JaccardIndex | None) -> JaccardIndex:
        return _settings(self.expr, self.type, index, "similar()", "Signature(threshold=0.8)")

    def similar(
        self, signature: Any, min_similarity: float | None = None, *, index: JaccardIndex | None = None
    ) -> ColumnElement[bool]:
        """Rows sharing a band with the signature (one index scan per band's B-tree, OR-ed) whose
        estimated similarity reaches min_similarity (default and lowest: the index's threshold):
        the rows simdb.similar finds."""
        chosen = self._plan(index)
        wanted = chosen.checked_similarity(min_similarity)
        probe = _signature(signature)
        probes = [
            row == given for row, given in zip(_keys(chosen, self.expr), _keys(chosen, probe), strict=True)
        ]
        estimate = _estimate(chosen, self.expr, probe)
        return and_(or_(*probes), estimate >= literal_column(repr(float(wanted))))

    def jaccard_estimate(self, signature: Any, *, index: JaccardIndex | None = None) -> ColumnElement[float]:
        """The estimated Jaccard similarity of the column's signature and another, as simdb verifies it."""
        if index is None:
            spec = getattr(self.type, "signature_spec", COLUMN_SIGNATURE_SPEC)
            permutations = getattr(self.type, "permutations", DEFAULT_PERMUTATIONS)
            threshold = getattr(self.type, "threshold", None) or DEFAULT_THRESHOLD
            index = jaccard_plan(threshold, permutations, spec)
        return _estimate(index, self.expr, _signature(signature))


def _signature(value: Any) -> ColumnElement[Any]:
    return value if isinstance(value, ColumnElement) else literal(value, Signature())


def _estimate(index: JaccardIndex, a: ColumnElement[Any], b: ColumnElement[Any]) -> ColumnElement[float]:
    text = index.estimate(_SLOTS[0], _SLOTS[1]).as_string(None)
    return _Template(text, (a, b), Double())


class Signature(TypeDecorator[UInt64Array]):
    """A MinHash signature: unsigned 64-bit values in Python (a uint64 array), bigint[] in SQL.
    With the settings of the column's jaccard index (threshold, and permutations and
    signature_spec where not the defaults), `column.similar(sig, s)` uses its B-trees."""

    impl = ARRAY(BigInteger)
    cache_ok = True
    comparator_factory = _SignatureComparator

    def __init__(
        self,
        threshold: float | None = None,
        permutations: int = DEFAULT_PERMUTATIONS,
        signature_spec: int = COLUMN_SIGNATURE_SPEC,
    ) -> None:
        super().__init__()
        self.threshold, self.permutations, self.signature_spec = threshold, permutations, signature_spec

    @property
    def plan(self) -> JaccardIndex | None:
        if self.threshold is None:
            return None
        return jaccard_plan(self.threshold, self.permutations, self.signature_spec)

    def process_bind_param(
        self, value: Sequence[int] | UInt64Array | None, dialect: Dialect
    ) -> list[int] | None:
        return None if value is None else to_stored(value)

    def process_result_value(self, value: Sequence[int] | None, dialect: Dialect) -> UInt64Array | None:
        return None if value is None else from_stored(value)


def similar(index: str, signature: Any, min_similarity: float | None = None) -> TableValuedAlias:
    """simdb.similar(index, signature, s) on a jaccard index, as a table (key, similarity)."""
    function = func.simdb.similar(index, _signature(signature), min_similarity)
    return function.table_valued(column("key", Text), column("similarity", Double)).alias("similar")


def similar_key(index: str, key: str, min_similarity: float | None = None) -> TableValuedAlias:
    """simdb.similar_key(index, key, s): the rows similar to a stored row, as a table (key, similarity)."""
    function = func.simdb.similar_key(index, key, min_similarity)
    return function.table_valued(column("key", Text), column("similarity", Double)).alias("similar_key")


def _column(table_or_column: Any, kind: Any = Fingerprint | Fingerprint128) -> ColumnElement[Any]:
    """A column, a model's attribute (its column), or a table with one column of that kind."""
    if isinstance(table_or_column, Table):
        found: list[ColumnElement[Any]] = [c for c in table_or_column.columns if isinstance(c.type, kind)]
        if len(found) != 1:
            raise InvalidParameter(
                f"table {table_or_column.name} has {len(found)} columns of type {kind}",
                "give the column itself",
            )
        return found[0]
    clause = getattr(table_or_column, "__clause_element__", None)
    given: ColumnElement[Any] = clause() if clause is not None else table_or_column
    return given


def simhash_indexes(
    table_or_column: Any,
    name: str,
    max_distance: int | None = None,
    *,
    blocks: int | None = None,
    expected_rows: int | None = None,
    index: SimhashIndex | None = None,
) -> list[Index]:
    """The B-trees of simhash index `name` in a fingerprint column, as SQLAlchemy Index objects of
    its table (so that Alembic's autogenerate sees them): the names and expressions `simdb attach
    --fingerprint-column` gives them. The settings default to the column type's (Fingerprint(...)),
    or come from `index` (simdb.index.get)."""
    sketch = _column(table_or_column)
    chosen = index
    if chosen is None:
        own = sketch.type if isinstance(sketch.type, _Indexed) else Fingerprint()
        k = max_distance if max_distance is not None else own.max_distance
        chosen = simhash_plan(
            k if k is not None else 3,
            blocks if blocks is not None else own.blocks,
            expected_rows if expected_rows is not None else own.expected_rows,
            own.bits,
        )
    return _btrees(chosen, sketch, name)


@dataclasses.dataclass(frozen=True)
class Declared:
    """What a B-tree declared by simhash_indexes or jaccard_indexes belongs to (its Index.info
    under "simdb"): simdb.alembic.autogenerate writes the index's attach_index from it."""

    name: str
    column: str
    index: SimdbIndex


def _btrees(index: SimdbIndex, sketch: ColumnElement[Any], name: str) -> list[Index]:
    declared = Declared(name, str(getattr(sketch, "name", sketch)), index)
    return [
        Index(names.app_btree_name(name, column_name), key, info={"simdb": declared})
        for column_name, key in zip(index.columns, _keys(index, sketch), strict=True)
    ]


def jaccard_indexes(table_or_column: Any, name: str, *, index: JaccardIndex | None = None) -> list[Index]:
    """The band B-trees of jaccard index `name` in a signature column (b0, b1, ...), as
    simhash_indexes gives a simhash index's: the settings are the column type's (Signature(...)),
    or come from `index` (simdb.index.get)."""
    sketch = _column(table_or_column, Signature)
    chosen = index or getattr(sketch.type, "plan", None)
    if chosen is None:
        raise InvalidParameter(
            f"jaccard_indexes({name!r}) needs the index's settings",
            "declare the column as Signature(threshold=...) or pass index=simdb.index.get(conn, NAME)",
        )
    return _btrees(chosen, sketch, name)


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """For Alembic's `include_object`: autogenerate leaves alone the B-trees simdb made on the
    application's tables that the MetaData does not declare (simdb_NAME_key, simdb_NAME_unfilled,
    and those of an index not given to simhash_indexes) instead of proposing to drop them."""
    return not (type_ == "index" and reflected and compare_to is None and (name or "").startswith("simdb_"))
