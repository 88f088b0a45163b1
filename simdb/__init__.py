"""simdb: near-duplicate search that lives in PostgreSQL (SimHash block tables, MinHash LSH bands)."""

from simdb.bits import hamming, parse_hex, to_hex, to_signed, to_unsigned
from simdb.errors import SimdbError
from simdb.minhash import document_signature
from simdb.simhash import SPEC_VERSION, Features, fingerprint

__all__ = [
    "SPEC_VERSION",
    "Features",
    "SimdbError",
    "document_signature",
    "fingerprint",
    "hamming",
    "parse_hex",
    "to_hex",
    "to_signed",
    "to_unsigned",
]
