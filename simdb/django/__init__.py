"""simdb in Django: a fingerprint field computed from a text field, the index of permuted-table
B-trees for Meta.indexes, the `near` lookup that uses it, and the Hamming expression.

Migrations import these names from this module (simdb.django.FingerprintField, ...): they are
public API. Only this package imports Django; the rest of simdb never does.
"""

from simdb.django.fields import FingerprintField, Near, compute_fingerprints
from simdb.django.functions import Hamming
from simdb.django.indexes import SimhashIndex

__all__ = ["FingerprintField", "Hamming", "Near", "SimhashIndex", "compute_fingerprints"]
