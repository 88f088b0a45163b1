"""Hamming(expression, fp): the number of bits two fingerprints differ in, and JaccardEstimate(
expression, sig): the similarity two signatures estimate, for annotate and
order_by (it reads every row it is given; filter with fingerprint__near to use the index)."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import FloatField, Func, IntegerField, Value
from django.db.models.sql.compiler import SQLCompiler

from simdb.django import keys


class Hamming(Func):
    """bit_count of a FingerprintField XOR a fingerprint (an unsigned or signed int, hex digits,
    or another expression), as simdb's own queries compute it for the field's width."""

    output_field = IntegerField()

    def __init__(self, expression: Any, fingerprint: Any, **extra: Any) -> None:
        self.given = None if hasattr(fingerprint, "resolve_expression") else fingerprint
        super().__init__(expression, Value(0) if self.given is not None else fingerprint, **extra)

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any
    ) -> tuple[str, list[Any]]:
        column, fingerprint = self.get_source_expressions()
        field = column.output_field
        if self.given is not None:  # the field's own conversion: signed bigint, or bit(128)
            fingerprint = Value(self.given, output_field=field)
        a, a_params = compiler.compile(column)
        b, b_params = compiler.compile(fingerprint)
        return keys.distance(getattr(field, "bits", 64), a, b), [*a_params, *b_params]


class JaccardEstimate(Func):
    """The Jaccard similarity a SignatureField and a signature (a list of ints, or another
    expression) estimate, as simdb's own queries verify a candidate (it reads every row it is
    given; filter with signature__similar to use the index)."""

    output_field = FloatField()

    def __init__(self, expression: Any, signature: Any, **extra: Any) -> None:
        self.given = None if hasattr(signature, "resolve_expression") else signature
        super().__init__(expression, Value(0) if self.given is not None else signature, **extra)

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any
    ) -> tuple[str, list[Any]]:
        column, signature = self.get_source_expressions()
        field = column.output_field
        if self.given is not None:  # the field's own conversion: signed bigint[]
            signature = Value(self.given, output_field=field)
        a, a_params = compiler.compile(column)
        b, b_params = compiler.compile(signature)
        return keys.estimate(field.layout(), a, f"({b}::bigint[])"), [*a_params, *b_params]
