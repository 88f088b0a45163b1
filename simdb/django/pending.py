"""Sketches computed a statement at a time: pre_save hands Django a Pending value, and the first
one compiled computes every value its field has pending in this thread in one call. bulk_create
calls pre_save for every row before it compiles any (so one INSERT is one batch); save() compiles
its own at once (a batch of one)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.sql.compiler import SQLCompiler

Compute = Callable[[Sequence[Any]], list[Any]]

_waiting = threading.local()  # .by_field: {field: [Pending, ...]} of this thread


class Pending:
    """The value of `field` for `instance`, from the source `text` read in pre_save: an expression
    to Django (resolved as itself, compiled as one parameter), set on the instance once computed."""

    contains_aggregate = False
    contains_over_clause = False
    contains_column_references = False

    def __init__(self, field: Field, instance: Model, text: Any, compute: Compute) -> None:
        self.field, self.instance, self.text, self.compute = field, instance, text, compute
        self.done, self.value = False, None
        waiting: dict[Field, list[Pending]] = _waiting.__dict__.setdefault("by_field", {})
        waiting.setdefault(field, []).append(self)

    def resolve_expression(self, *args: Any, **kwargs: Any) -> Pending:
        return self

    def get_source_expressions(self) -> list[Any]:
        return []

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
        if not self.done:
            _compute_waiting(self)
        return "%s", [self.field.get_db_prep_save(self.value, connection=connection)]

    def __repr__(self) -> str:
        return f"Pending({self.field.name} of {type(self.instance).__name__})"


def _compute_waiting(first: Pending) -> None:
    """Compute, in one call, `first` and every other value of its field this thread has pending;
    set them on their instances (as pre_save sets a value)."""
    waiting: dict[Field, list[Pending]] = _waiting.__dict__.setdefault("by_field", {})
    others = [item for item in waiting.pop(first.field, []) if not (item.done or item is first)]
    batch = [first, *others]
    values = first.compute([item.text for item in batch])
    for item, value in zip(batch, values, strict=True):
        item.value, item.done = value, True
        setattr(item.instance, first.field.attname, value)
