"""simdb: near-duplicate search that lives in PostgreSQL (SimHash block tables, MinHash LSH bands)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from simdb.bits import hamming, parse_hex, to_hex, to_signed, to_unsigned
from simdb.errors import SimdbError

if TYPE_CHECKING:
    from simdb.handle import Database
    from simdb.minhash import document_signature
    from simdb.simhash import SPEC_VERSION, Features, fingerprint

# Names whose modules load numpy and xxhash: imported on first use, so that `import simdb` (and
# with it `simdb --help`) stays light.
_LAZY = {
    "SPEC_VERSION": "simdb.simhash",
    "Features": "simdb.simhash",
    "fingerprint": "simdb.simhash",
    "document_signature": "simdb.minhash",
}


def __getattr__(name: str) -> object:
    """simdb.fingerprint and the other fingerprint names, from their module on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'simdb' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def connect(dsn: str | None = None) -> Database:
    """A bound-handle connection: `simdb.connect(dsn).index("docs").near(text=...)` (simdb.handle;
    imported here on first use, so that `import simdb` stays light)."""
    from simdb import handle

    return handle.connect(dsn)


__all__ = [
    "SPEC_VERSION",
    "Features",
    "SimdbError",
    "connect",
    "document_signature",
    "fingerprint",
    "hamming",
    "parse_hex",
    "to_hex",
    "to_signed",
    "to_unsigned",
]
