"""Sketches computed a bulk_create at a time: bulk_create prepares every instance before it
saves any (the model's _prepare_related_fields_for_save, wrapped by simdb.django.saving, names
them here), and the first pre_save of the batch sketches them all in one call. A pre_save no
batch announced (save()) sketches its own row; so does any whose text changed since."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

from django.db.models import Model


class Sourced(Protocol):
    """A field computed from a source field of its model (simdb.django.fields.Sourced)."""

    name: str
    attname: str
    source: str | None

    def compute(self, text: Any) -> Any: ...

    def compute_many(self, texts: Sequence[Any]) -> list[Any]: ...


READY = "_simdb_sketched"  # on an instance: {attname: (text, value)} computed with its batch

_waiting = threading.local()  # .by_field: {field: [instance, ...]} announced in this thread


def _by_field() -> dict[Sourced, list[Model]]:
    found: dict[Sourced, list[Model]] = _waiting.__dict__.setdefault("by_field", {})
    return found


def announce(instance: Model, fields: list[Sourced]) -> None:
    """bulk_create will save this instance: its fields' values are to be computed with the others'."""
    waiting = _by_field()
    for field in fields:
        waiting.setdefault(field, []).append(instance)


def value_of(field: Sourced, instance: Model, text: Any) -> Any:
    """The field's value of `text`, the instance's source: computed with its batch when one was
    announced (all of it in one call, at the batch's first pre_save), else alone."""
    if field.attname not in instance.__dict__.get(READY, {}):
        waiting = _by_field().pop(field, [])
        if any(item is instance for item in waiting):  # (else: left by a bulk_create that failed)
            texts = [getattr(item, str(field.source)) for item in waiting]
            for item, given, value in zip(waiting, texts, field.compute_many(texts), strict=True):
                item.__dict__.setdefault(READY, {})[field.attname] = (given, value)
    entry = instance.__dict__.get(READY, {}).pop(field.attname, None)
    if entry is not None and entry[0] is text:  # the very text the batch read
        return entry[1]
    return field.compute(text)
