"""What a model with a sourced field saves: Django calls pre_save only for the fields in
update_fields (given, or the loaded fields of an instance from only()/defer()), so the model's
save_base is wrapped to list the sketch wherever its source is listed; and bulk_create prepares
every instance before it saves any, so the model's _prepare_related_fields_for_save is wrapped to
announce them, for pre_save to sketch the batch in one call (simdb.django.batch)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models

from simdb.django import batch
from simdb.django.batch import Sourced

Finder = Callable[[type[models.Model]], list[Sourced]]  # a model's sourced fields

WRAPPED = "_simdb_sketches_follow_sources"


def sketches_of(model: type[models.Model], update_fields: Iterable[str], sourced: Finder) -> frozenset[str]:
    """The names of the model's sourced fields whose source (by name or attname) is listed."""
    listed = frozenset(update_fields)
    found = set()
    for field in sourced(model):
        try:
            attname = model._meta.get_field(str(field.source)).attname
        except FieldDoesNotExist:  # (the checks say so: simdb.E001)
            continue
        if field.source in listed or attname in listed:
            found.add(field.name)
    return frozenset(found)


def follow_sources(model: type[models.Model], sourced: Finder) -> None:
    """Wrap the model's save_base (once) so that update_fields naming a source also names its
    sketch. save_base rather than save: a save() override may choose update_fields itself, and
    the pre_save signal gets them as a frozenset it cannot extend."""
    if getattr(model.save_base, WRAPPED, False):  # (a parent's wrapper asks type(self))
        return
    _announce_bulk_creates(model, sourced)
    inherited: Callable[..., Any] = model.save_base

    @functools.wraps(inherited)
    def save_base(self: models.Model, *args: Any, **kwargs: Any) -> Any:
        given = kwargs.get("update_fields")
        if given is not None and not kwargs.get("raw", False):
            listed = frozenset(given)
            kwargs["update_fields"] = listed | sketches_of(type(self), listed, sourced)
        return inherited(self, *args, **kwargs)

    setattr(save_base, WRAPPED, True)
    model.save_base = save_base


def _announce_bulk_creates(model: type[models.Model], sourced: Finder) -> None:
    """Wrap the model's _prepare_related_fields_for_save, which bulk_create calls for each instance
    before it saves any (operation_name="bulk_create"), to announce the instance's sourced fields
    (simdb.django.batch). Should a later Django stop calling it, each row is sketched alone."""
    inherited: Callable[..., Any] | None = getattr(model, "_prepare_related_fields_for_save", None)
    if inherited is None:
        return

    @functools.wraps(inherited)
    def prepare(self: models.Model, *args: Any, **kwargs: Any) -> Any:
        operation = kwargs.get("operation_name", args[0] if args else None)
        if operation == "bulk_create":
            batch.announce(self, sourced(type(self)))
        return inherited(self, *args, **kwargs)

    model._prepare_related_fields_for_save = prepare
