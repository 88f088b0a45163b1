"""An index and its parts: modes, storage, placement, the catalog and the names it owns.

`simdb.index.create`, `get`, `get_or_create`, `list_indexes`, `drop` and `grant` are the
lifecycle functions (simdb.index.lifecycle), loaded on first use so that importing one part of
the package does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simdb.index.lifecycle import create, drop, get, get_or_create, grant, list_indexes

_LIFECYCLE = frozenset({"create", "drop", "get", "get_or_create", "grant", "list_indexes"})


def __getattr__(name: str) -> object:
    """simdb.index.get and the other lifecycle functions, from simdb.index.lifecycle."""
    if name not in _LIFECYCLE:
        raise AttributeError(f"module 'simdb.index' has no attribute {name!r}")
    return getattr(importlib.import_module("simdb.index.lifecycle"), name)


__all__ = ["create", "drop", "get", "get_or_create", "grant", "list_indexes"]
