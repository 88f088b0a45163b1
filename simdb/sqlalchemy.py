"""SQLAlchemy 2 helpers: a fingerprint column type and SQL expressions for simdb's functions.

from simdb.sqlalchemy import Fingerprint, hamming, near

class Article(Base):
    fingerprint: Mapped[int] = mapped_column(Fingerprint)   # unsigned in Python, bigint in SQL

dups = near("articles_dups", fingerprint_of_doc, 3)
select(Article.title, dups.c.distance).join(dups, cast(Article.id, Text) == dups.c.key)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Dialect, Integer, Text, column, func, literal
from sqlalchemy.sql.expression import TableValuedAlias
from sqlalchemy.types import TypeDecorator

from simdb.bits import to_signed, to_unsigned


class Fingerprint(TypeDecorator[int]):
    """An unsigned 64-bit fingerprint in Python, stored as PostgreSQL bigint (same bits)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_signed(value)

    def process_result_value(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else to_unsigned(value)


def _fingerprint(value: Any) -> ColumnElement[int]:
    """A Python int becomes a bound Fingerprint parameter; a column or expression stays as it is."""
    return literal(value, Fingerprint()) if isinstance(value, int) else value


def hamming(a: Any, b: Any) -> ColumnElement[int]:
    """simdb.hamming(a, b): the number of differing bits (columns, expressions or unsigned ints)."""
    return func.simdb.hamming(_fingerprint(a), _fingerprint(b), type_=Integer)


def near(index: str, fingerprint: Any, max_distance: int | None = None) -> TableValuedAlias:
    """simdb.near(index, fingerprint, k) as a table (key text, distance integer) to join with models."""
    function = func.simdb.near(index, _fingerprint(fingerprint), max_distance)
    return function.table_valued(column("key", Text), column("distance", Integer)).alias("near")


def near_key(index: str, key: str, max_distance: int | None = None) -> TableValuedAlias:
    """simdb.near_key(index, key, k): the rows near a stored row, as a table (key, distance)."""
    function = func.simdb.near_key(index, key, max_distance)
    return function.table_valued(column("key", Text), column("distance", Integer)).alias("near_key")
