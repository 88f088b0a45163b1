"""Compile simdb's kernels up front, where a user expects to wait.

numba compiles simdb.kernels.compiled on their first use and caches the machine code on disk (about 10 s,
once per install). `simdb init` and `python -m simdb.warmup` (for an image or an install script,
no database needed) call warm(): every kernel the fingerprint and signature specs use, for every
feature kind, spec version and width, and the pairing of fingerprints, is compiled or, when the
cache already holds it, loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from simdb import load
from simdb.plan import pairing
from simdb.sketch import features, minhash, short_text, simhash
from simdb.sketch.features import Features

# Short text goes through the batched kernels; text longer than a piece, and any bytes features,
# through the piece-at-a-time ones (features.sorted_out decides).
_SHORT = "warm the fingerprint kernels of simdb once"
_LONG = (_SHORT + " ") * (features.PIECE // len(_SHORT) + 1)
_MEDIUM = (_SHORT + " ") * (2 * short_text.LIMIT // len(_SHORT))  # past what short_text counts without them
_FEATURES = (Features("word", 3), Features("char", 5), Features("bytes", 4))


def warm() -> None:
    """Compile (or load) every kernel that fingerprints, signatures and all pairs call."""
    documents = [_SHORT, _LONG]
    for kind in _FEATURES:
        for spec in simhash.SPEC_VERSIONS:
            for bits in features.WIDTHS:
                simhash.fingerprints(documents, kind, spec, bits)
        for spec in (1, 2):
            minhash.document_signatures(documents, kind, minhash.DEFAULT_PERMUTATIONS, spec)
    pairing.load_kernels()
    load.load_kernels()


def warm_sketch(sketch: Callable[[str], object]) -> None:
    """Load the kernels one sketch function calls (an index's `sketch`) for a text shorter than a
    piece: a text past short_text.LIMIT (which loads them), then a short one (which takes them too,
    once they are loaded)."""
    sketch(_MEDIUM)
    sketch(_SHORT)


if __name__ == "__main__":
    warm()
