"""Hamming(expression, fp): the number of bits two 64-bit fingerprints differ in, for annotate
and order_by (it reads every row it is given; filter with fingerprint__near to use the index)."""

from __future__ import annotations

from typing import Any

from django.db.models import Func, IntegerField, Value

from simdb import bits


class Hamming(Func):
    """bit_count((a # b)::bit(64)): a fingerprint field and a fingerprint (an unsigned or signed
    int, or another expression)."""

    arg_joiner = " # "
    template = "bit_count((%(expressions)s)::bit(64))::integer"
    output_field = IntegerField()

    def __init__(self, expression: Any, fingerprint: Any, **extra: Any) -> None:
        if isinstance(fingerprint, int) and not isinstance(fingerprint, bool):
            fingerprint = Value(bits.to_signed(bits.to_unsigned(fingerprint)))
        super().__init__(expression, fingerprint, **extra)
