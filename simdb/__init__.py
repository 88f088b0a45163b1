"""simdb: near-duplicate search that lives in PostgreSQL (SimHash block tables, MinHash LSH bands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simdb.bits import hamming, parse_hex, to_hex, to_signed, to_unsigned
from simdb.errors import SimdbError
from simdb.minhash import document_signature
from simdb.simhash import SPEC_VERSION, Features, fingerprint

if TYPE_CHECKING:
    from simdb.handle import Database


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
