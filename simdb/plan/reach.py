"""What a simhash index finds, in words (pure code): the Jaccard similarity of shingles at which
it finds nine copies in ten, and the size of document in which one changed line stays that close.

Two documents whose shingle sets have Jaccard similarity J have fingerprints whose bits differ
independently with a probability p(J) that depends on the fingerprint spec (one-bit MinHash:
(1 - J) / 2; SimHash: angle / pi), so their Hamming distance is Binomial(bits, p(J)) and an index
of reach k finds the pair with probability P(Binomial <= k). `simdb bench --edits` measures the
same on real files; these figures are the model's, which the bench's agree with (docs/performance.md, "Single
edits").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

SHARE = 0.9  # "finds nine copies in ten"
LINE_WORDS = 10  # the words of a changed line (a line of prose, about 60 characters)
WORD_BYTES = 6  # bytes a word of English text takes, with its space


def found(bits: int, k: int, difference: float) -> float:
    """P(Binomial(bits, difference) <= k): the chance that a pair whose bits each differ with
    probability `difference` is within k bits."""
    return sum(math.comb(bits, i) * difference**i * (1 - difference) ** (bits - i) for i in range(k + 1))


def least_jaccard(holds: Callable[[float], bool]) -> float:
    """The least Jaccard similarity in [0, 1] at which `holds`, which once true stays true as J
    rises (bisection, to 2^-40)."""
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def jaccard_found(bits: int, k: int, bit_difference: Callable[[float], float], share: float = SHARE) -> float:
    """The least Jaccard similarity at which an index of reach k finds `share` of the pairs."""
    return least_jaccard(lambda j: found(bits, k, bit_difference(j)) >= share)


def jaccard_at(bits: int, distance: int, bit_difference: Callable[[float], float]) -> float:
    """The Jaccard similarity whose expected Hamming distance is `distance`: where
    bits * bit_difference(J) = distance (0 at half the bits or more, where unrelated documents are)."""
    share = distance / bits
    if share >= bit_difference(0.0):
        return 0.0
    return least_jaccard(lambda j: bit_difference(j) <= share)


def line_changed_bytes(jaccard: float, n: int) -> float:
    """Bytes of a document of word n-grams that keeps Jaccard `jaccard` with a copy of it in which
    one line of LINE_WORDS words is replaced: the line's words change c = LINE_WORDS + n - 1
    shingles, and J = (N - c) / (N + c) for a document of N shingles."""
    if jaccard >= 1.0:
        return math.inf
    changed = LINE_WORDS + n - 1
    return changed * (1 + jaccard) / (1 - jaccard) * WORD_BYTES


@dataclass(frozen=True)
class Reach:
    """What an index of a fingerprint kind, width and k finds."""

    jaccard: float  # finds SHARE of the pairs at or above this Jaccard similarity
    line_bytes: float | None  # one changed line: found in documents of at least this size (word features)

    def words(self) -> str:
        """The reach in a sentence: `create` and `simdb list` say it."""
        said = f"finds 9 in 10 copies at Jaccard >= {self.jaccard:.2f}"
        if self.line_bytes is None:
            return said
        return f"{said} (a changed line in documents over {_size(self.line_bytes)})"


@functools.cache
def of(bits: int, k: int, bit_difference: Callable[[float], float], words: int | None) -> Reach:
    """The reach of an index; `words` is the n of word:n features (None for char or bytes
    features, where a line is no unit). Cached: `simdb list` asks it of every index."""
    jaccard = jaccard_found(bits, k, bit_difference)
    return Reach(jaccard, None if words is None else line_changed_bytes(jaccard, words))


def _size(count: float) -> str:
    """A size in round words: 900 bytes, 2 KB, 35 KB, 1.2 MB."""
    if count < 1000:
        return f"{round(count, -2):.0f} bytes"
    if count < 1e6:
        kilobytes = count / 1000
        return f"{kilobytes:.1f} KB" if kilobytes < 10 else f"{kilobytes:.0f} KB"
    return f"{count / 1e6:.1f} MB"
