"""The modes of index, by name: each is one module with its Spec (parameters), Index and SQL.

simhash  exact Hamming search on 64- or 128-bit SimHash fingerprints (permuted block columns)
jaccard  MinHash signatures with LSH band keys, at or above a Jaccard threshold
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from simdb.errors import InvalidParameter
from simdb.index.modes.base import Index, Sketch, Spec, SqlSketch
from simdb.index.modes.jaccard import JaccardIndex, JaccardSpec
from simdb.index.modes.simhash import SimhashIndex, SimhashSpec

SPECS: dict[str, type[Spec]] = {kind.mode: kind for kind in (SimhashSpec, JaccardSpec)}
INDEXES: dict[str, type[Index]] = {kind.mode: kind for kind in (SimhashIndex, JaccardIndex)}
MODES = tuple(SPECS)
DEFAULT_MODE = "simhash"


def _known(mode: str) -> str:
    if mode not in SPECS:
        raise InvalidParameter(f"unknown mode {mode!r}", f"use one of {', '.join(MODES)}")
    return mode


def parameter_names(mode: str) -> list[str]:
    """The parameters of a mode's Spec, which are also its `simdb create` options."""
    return [field.name for field in dataclasses.fields(SPECS[_known(mode)])]  # type: ignore[arg-type]


def spec(mode: str, **given: Any) -> Spec:
    """The Spec of `mode` from the parameters given (None means: the default)."""
    return SPECS[_known(mode)](**{name: value for name, value in given.items() if value is not None})


def newest_spec(mode: str, **given: Any) -> Spec:
    """The Spec the CLI gives a new index of `mode`: Spec.newest of the parameters given (None
    means: the recommended default)."""
    return SPECS[_known(mode)].newest(**{name: value for name, value in given.items() if value is not None})


def foreign(mode: str, given: Mapping[str, object]) -> dict[str, list[str]]:
    """{other mode: its parameters that were given}: options a `mode` index cannot take."""
    own = set(parameter_names(mode))
    found: dict[str, list[str]] = {}
    for other in MODES:
        wrong = [n for n in parameter_names(other) if n not in own and given.get(n) is not None]
        if other != mode and wrong:
            found[other] = wrong
    return found


def index_class(mode: str) -> type[Index]:
    """The Index class that loads a catalog row of `mode`."""
    return INDEXES[_known(mode)]


__all__ = [
    "DEFAULT_MODE",
    "MODES",
    "Index",
    "JaccardIndex",
    "JaccardSpec",
    "SimhashIndex",
    "SimhashSpec",
    "Sketch",
    "Spec",
    "SqlSketch",
    "foreign",
    "index_class",
    "newest_spec",
    "parameter_names",
    "spec",
]
