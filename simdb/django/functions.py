"""Hamming(expression, fp): the number of bits two fingerprints differ in; JaccardEstimate(
expression, sig): the similarity two signatures estimate. For annotate and order_by (they read
every row they are given; filter with fingerprint__near or signature__similar to use the index)."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import FloatField, Func, IntegerField, Value
from django.db.models.sql.compiler import SQLCompiler

from simdb.django import keys


class _OfValue(Func):
    """A function of a field's column and a value (given as the field takes it, converted by the
    field, or another expression): `combine` writes the SQL of the two."""

    def __init__(self, expression: Any, value: Any, **extra: Any) -> None:
        self.given = None if hasattr(value, "resolve_expression") else value
        super().__init__(expression, Value(0) if self.given is not None else value, **extra)

    def combine(self, field: Any, a: str, b: str) -> str:
        raise NotImplementedError

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any
    ) -> tuple[str, list[Any]]:
        column, value = self.get_source_expressions()
        field = column.output_field
        if self.given is not None:  # the field's own conversion: signed bigint, bit(128), bigint[]
            value = Value(self.given, output_field=field)
        a, a_params = compiler.compile(column)
        b, b_params = compiler.compile(value)
        return self.combine(field, a, b), [*a_params, *b_params]


class Hamming(_OfValue):
    """bit_count of a FingerprintField XOR a fingerprint (an unsigned or signed int, hex digits,
    or another expression), as simdb's own queries compute it for the field's width."""

    output_field = IntegerField()

    def combine(self, field: Any, a: str, b: str) -> str:
        return keys.distance(getattr(field, "bits", 64), a, b)


class JaccardEstimate(_OfValue):
    """The Jaccard similarity a SignatureField and a signature (a list of ints, or another
    expression) estimate, as simdb's own queries verify a candidate (it reads every row it is
    given; filter with signature__similar to use the index)."""

    output_field = FloatField()

    def combine(self, field: Any, a: str, b: str) -> str:
        return keys.estimate(field.layout(), a, f"({b}::bigint[])")
