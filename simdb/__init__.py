"""simdb: near-duplicate search that lives in PostgreSQL (SimHash + permuted block B-trees)."""

from simdb.bits import hamming, parse_hex, to_hex, to_signed, to_unsigned
from simdb.errors import SimdbError
from simdb.simhash import SPEC_VERSION, Features, fingerprint

__all__ = [
    "SPEC_VERSION",
    "Features",
    "SimdbError",
    "fingerprint",
    "hamming",
    "parse_hex",
    "to_hex",
    "to_signed",
    "to_unsigned",
]
