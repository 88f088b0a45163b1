"""simdb: near-duplicate search that lives in PostgreSQL (SimHash block tables, MinHash LSH bands)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from simdb import kernels, moved
from simdb.errors import SimdbError
from simdb.sketch.bits import hamming, parse_hex, to_hex, to_signed, to_unsigned

if TYPE_CHECKING:
    from simdb.api import Database
    from simdb.index.modes.jaccard import JaccardSpec
    from simdb.index.modes.simhash import SimhashSpec
    from simdb.sketch.features import Features
    from simdb.sketch.minhash import document_signature
    from simdb.sketch.simhash import SPEC_VERSION, fingerprint

# Names whose modules load numpy and xxhash: imported on first use, so that `import simdb` (and
# with it `simdb --help`) stays light.
_LAZY = {
    "SPEC_VERSION": "simdb.sketch.simhash",
    "Features": "simdb.sketch.simhash",
    "fingerprint": "simdb.sketch.simhash",
    "document_signature": "simdb.sketch.minhash",
    "SimhashSpec": "simdb.index.modes.simhash",
    "JaccardSpec": "simdb.index.modes.jaccard",
}


def __getattr__(name: str) -> object:
    """simdb.fingerprint and the other fingerprint names, from their module on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'simdb' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def connect(dsn: str | None = None) -> Database:
    """A bound-handle connection: `simdb.connect(dsn).index("docs").near(text=...)` (simdb.api;
    imported here on first use, so that `import simdb` stays light)."""
    from simdb import api

    return api.connect(dsn)


def _warm_every_kernel() -> None:
    """Compile every kernel (simdb.warmup), once numba has started on one: see simdb.kernels."""
    from simdb import warmup

    warmup.warm()


moved.install()
kernels.AFTER_FIRST_COMPILE.append(_warm_every_kernel)

__all__ = [
    "SPEC_VERSION",
    "Features",
    "JaccardSpec",
    "SimdbError",
    "SimhashSpec",
    "connect",
    "document_signature",
    "fingerprint",
    "hamming",
    "parse_hex",
    "to_hex",
    "to_signed",
    "to_unsigned",
]
