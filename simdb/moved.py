"""Module paths of simdb before it was grouped into packages by layer: each still imports, as
the module it became, with a DeprecationWarning that names the new path."""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

MOVED = {
    "simdb.attach": "simdb.follow.keep",
    "simdb.autogenerate": "simdb.alembic.autogenerate",
    "simdb.batch": "simdb.duplicates",
    "simdb.bits": "simdb.sketch.bits",
    "simdb.blocks": "simdb.plan.blocks",
    "simdb.borrowed": "simdb.db.borrowed",
    "simdb.capture": "simdb.follow.keep",
    "simdb.catalog": "simdb.index.catalog",
    "simdb.compare": "simdb.serve.compare",
    "simdb.connection": "simdb.db.connection",
    "simdb.dispatch": "simdb.index.dispatch",
    "simdb.embedded": "simdb.db.embedded",
    "simdb.handle": "simdb.api",
    "simdb.intable": "simdb.follow.app_column",
    "simdb.keys": "simdb.sources.keys",
    "simdb.layout": "simdb.index.v1_upgrade",
    "simdb.minhash": "simdb.sketch.minhash",
    "simdb.modes": "simdb.index.modes",
    "simdb.names": "simdb.index.names",
    "simdb.onebit": "simdb.sketch.onebit",
    "simdb.onetext": "simdb.sketch.short_text",
    "simdb.pairing": "simdb.plan.pairing",
    "simdb.placement": "simdb.index.placement",
    "simdb.planner": "simdb.plan.planner",
    "simdb.reach": "simdb.plan.reach",
    "simdb.readers": "simdb.sources.readers",
    "simdb.reconnect": "simdb.db.reconnect",
    "simdb.resources": "simdb.db.resources",
    "simdb.review": "simdb.serve.review",
    "simdb.rowscan": "simdb.index.rowscan",
    "simdb.sabridge": "simdb.db.sabridge",
    "simdb.scaleplan": "simdb.plan.citus_cost",
    "simdb.simhash": "simdb.sketch.simhash",
    "simdb.storage": "simdb.index.storage",
    "simdb.tables": "simdb.index.tables",
    "simdb.texts": "simdb.index.texts",
}


def new_path(name: str) -> str | None:
    """Where the old module NAME lives now (a moved module or one inside a moved package)."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        old = ".".join(parts[:end])
        if old in MOVED:
            return ".".join([MOVED[old], *parts[end:]])
    return None


class _Finder:
    """Finds an old path and loads it as a copy of the new module's names (a meta path finder and
    its loader, without importlib.abc, whose import would slow `simdb --help`)."""

    def find_spec(
        self, fullname: str, path: object, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("simdb.") or new_path(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self), is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # (the default module)

    def exec_module(self, module: ModuleType) -> None:
        new = new_path(module.__name__)
        if new is None:  # (find_spec found it)
            raise ImportError(module.__name__)
        warnings.warn(
            f"{module.__name__} is now {new}; import it from there", DeprecationWarning, stacklevel=2
        )
        target = importlib.import_module(new)
        module.__dict__.update({k: v for k, v in vars(target).items() if not k.startswith("__")})


def install() -> None:
    """Let the old paths import (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
