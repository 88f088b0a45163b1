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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Dialect, Double, Integer, Text, column, func, literal
from sqlalchemy.dialects.postgresql import ARRAY, BIT
from sqlalchemy.sql.expression import TableValuedAlias
from sqlalchemy.types import TypeDecorator

from simdb.bits import to_signed, to_unsigned
from simdb.minhash import UInt64Array, from_stored, to_stored
from simdb.modes.widths import BitString


class Fingerprint(TypeDecorator[int]):
    """An unsigned 64-bit fingerprint in Python, stored as PostgreSQL bigint (same bits)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_signed(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_unsigned(value)


class Fingerprint128(TypeDecorator[int]):
    """An unsigned 128-bit fingerprint in Python, stored as PostgreSQL bit(128)."""

    impl = BIT(128)
    cache_ok = True

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


class Signature(TypeDecorator[UInt64Array]):
    """A MinHash signature: unsigned 64-bit values in Python (a uint64 array), bigint[] in SQL."""

    impl = ARRAY(BigInteger)
    cache_ok = True

    def process_bind_param(
        self, value: Sequence[int] | UInt64Array | None, dialect: Dialect
    ) -> list[int] | None:
        return None if value is None else to_stored(value)

    def process_result_value(self, value: Sequence[int] | None, dialect: Dialect) -> UInt64Array | None:
        return None if value is None else from_stored(value)


def similar(index: str, signature: Any, min_similarity: float | None = None) -> TableValuedAlias:
    """simdb.similar(index, signature, s) on a jaccard index, as a table (key, similarity)."""
    bound = signature if isinstance(signature, ColumnElement) else literal(signature, Signature())
    function = func.simdb.similar(index, bound, min_similarity)
    return function.table_valued(column("key", Text), column("similarity", Double)).alias("similar")


def similar_key(index: str, key: str, min_similarity: float | None = None) -> TableValuedAlias:
    """simdb.similar_key(index, key, s): the rows similar to a stored row, as a table (key, similarity)."""
    function = func.simdb.similar_key(index, key, min_similarity)
    return function.table_valued(column("key", Text), column("similarity", Double)).alias("similar_key")
