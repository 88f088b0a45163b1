"""The sketches a save writes: Django calls pre_save only for the fields in update_fields (given,
or the loaded fields of an instance from only()/defer()), so a model with a sourced field has its
save_base wrapped to list the sketch wherever its source is listed."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models

WRAPPED = "_simdb_sketches_follow_sources"


def sketches_of(model: type[models.Model], update_fields: Iterable[str]) -> frozenset[str]:
    """The names of the model's sourced fields whose source (by name or attname) is listed."""
    from simdb.django.fields import SourcedField

    listed = frozenset(update_fields)
    found = set()
    for field in model._meta.concrete_fields:
        if not isinstance(field, SourcedField) or field.source is None:
            continue
        try:
            attname = model._meta.get_field(field.source).attname
        except FieldDoesNotExist:  # (the checks say so: simdb.E001)
            continue
        if field.source in listed or attname in listed:
            found.add(field.name)
    return frozenset(found)


def follow_sources(model: type[models.Model]) -> None:
    """Wrap the model's save_base (once) so that update_fields naming a source also names its
    sketch. save_base rather than save: a save() override may choose update_fields itself, and
    the pre_save signal gets them as a frozenset it cannot extend."""
    if getattr(model.save_base, WRAPPED, False):  # (a parent's wrapper asks type(self))
        return
    inherited: Callable[..., Any] = model.save_base

    @functools.wraps(inherited)
    def save_base(self: models.Model, *args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("update_fields")
        if given is not None and not kwargs.get("raw", False):
            listed = frozenset(given)
            kwargs["update_fields"] = listed | sketches_of(type(self), listed)
        return inherited(self, *args, **kwargs)

    setattr(save_base, WRAPPED, True)
    model.save_base = save_base
