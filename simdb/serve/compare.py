"""Two texts compared as a person reads them: a word-level diff, and the exact shingle Jaccard.

Pure (no database): the diff marks the words one text has and the other has not; the Jaccard is
that of the two documents' shingle sets under an index's features, the shingles its sketches are
made of (simdb.sketch.simhash), so that it says what a distance or an estimate means on these texts.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from simdb.sketch.features import EmptyDocument, Features, feature_hashes

_WORD = re.compile(r"\S+\s*|\s+")  # a word with the spaces after it (or leading spaces)


@dataclass(frozen=True)
class Segment:
    """A run of one text: `changed` words (not in the other text, or in its place) or shared ones."""

    text: str
    changed: bool


def words(text: str) -> list[str]:
    """The text in words, each with its following whitespace; joined they give the text back."""
    return _WORD.findall(text)


def word_diff(a: str, b: str) -> tuple[list[Segment], list[Segment]]:
    """Each text in runs, changed or shared, by a word-level diff (difflib's matching blocks over
    the words, whitespace ignored); joined, each side's runs give its text back."""
    left, right = words(a), words(b)
    matcher = difflib.SequenceMatcher(
        None, [w.strip() for w in left], [w.strip() for w in right], autojunk=False
    )
    side_a: list[Segment] = []
    side_b: list[Segment] = []
    for op, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        changed = op != "equal"
        _append(side_a, "".join(left[a_start:a_end]), changed)
        _append(side_b, "".join(right[b_start:b_end]), changed)
    return side_a, side_b


def _append(runs: list[Segment], text: str, changed: bool) -> None:
    if changed and text != text.rstrip():  # (the spaces after changed words are not marked)
        _append(runs, text.rstrip(), changed)
        _append(runs, text[len(text.rstrip()) :], False)
        return
    if not text:
        return
    if runs and runs[-1].changed == changed:
        runs[-1] = Segment(runs[-1].text + text, changed)
    else:
        runs.append(Segment(text, changed))


def shingle_jaccard(a: str, b: str, features: Features) -> float | None:
    """|A ∩ B| / |A ∪ B| of the two texts' shingle sets under `features` (None if either has no
    shingle: too short for a shingle)."""
    try:
        first = set(feature_hashes(a, features).tolist())
        second = set(feature_hashes(b, features).tolist())
    except EmptyDocument:
        return None
    return len(first & second) / len(first | second)
