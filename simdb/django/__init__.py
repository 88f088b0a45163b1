"""simdb in Django: fingerprint and signature fields computed from a text field, the indexes of
simdb's B-trees for Meta.indexes (SimhashIndex, JaccardIndex), the `near` and `similar` lookups
that use them, and the Hamming and JaccardEstimate expressions.

Migrations import these names from this module (simdb.django.FingerprintField, ...): they are
public API. Only this package imports Django; the rest of simdb never does.
"""

from simdb.django.fields import (
    FingerprintField,
    Near,
    SignatureField,
    Similar,
    compute_fingerprints,
)
from simdb.django.functions import Hamming, JaccardEstimate
from simdb.django.indexes import JaccardIndex, SimhashIndex

__all__ = [
    "FingerprintField",
    "Hamming",
    "JaccardEstimate",
    "JaccardIndex",
    "Near",
    "SignatureField",
    "SimhashIndex",
    "Similar",
    "compute_fingerprints",
]
