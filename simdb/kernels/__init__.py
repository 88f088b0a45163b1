"""Compiled loops (numba): the hashing, minima and pairing kernels (simdb.kernels.compiled).

This face stays light: it holds only the hooks that run when numba first compiles one of the
kernels in a process, which the layers above register without loading numba.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np

# Called (in a thread) the first time a process compiles a kernel: simdb registers
# simdb.warmup.warm, which compiles every other kernel through the specs that call them.
AFTER_FIRST_COMPILE: list[Callable[[], None]] = []

# MurmurHash3's 64-bit finaliser (fmix64), shared by the kernels and their numpy twin for one
# short text (simdb.sketch.short_text).
FMIX_C1 = 0xFF51AFD7ED558CCD
FMIX_C2 = 0xC4CEB9FE1A85EC53


class Shingling(NamedTuple):
    """How a text becomes shingle hashes: its units are its characters (`chars`) or the words of
    the text mapped through `mapping`, and a shingle is `n` units folded with `multiplier`."""

    chars: bool
    mapping: bytes
    n: int
    multiplier: np.uint64
