"""Planted single edits in real text (`simdb bench --edits FOLDER`): which fingerprint finds a
copy of a file with one word, line or sentence changed, and what else it reports.

From each size band (1-2 KB, 2-10 KB, 10-200 KB of UTF-8 text) a uniform random sample of the
folder's files is drawn, and each file gets one copy per kind of edit (KINDS): a word replaced,
a line replaced, a sentence appended, three words replaced, 1% of words replaced, a paragraph
moved, whitespace and case reflowed. Recall is the share of these (original, copy) pairs a
method reports, by kind and by band. Precision is the share of all the pairs of the corpus
(originals and copies) a method reports whose exact Jaccard similarity of shingle sets is at
least the threshold (default 0.5): the truth is calibrate.similar_pairs, exact.

Fingerprints are computed in Python only, no database: an index returns exactly the stored rows
within Hamming distance k of a query (the permuted block tables are exact up to their k), so
the pairs within k of these fingerprints (calibrate.close_pairs) are what an index with that k
returns. The jaccard mode's row is its bands and check played out as its index works
(calibrate.lsh_pairs). Methods (METHODS): simdb's default (one-bit MinHash, simdb.sketch.onebit, 64
bits, k = 5); the former default (SimHash spec v2, 64 bits, k = 3); the plain set SimHash
(quality.plain_set_simhash), k = 3; spec v2 at k = 6; two independent SimHashes (the two halves
of spec v2 at 128 bits), a pair found by either at k = 3; one-bit MinHash at k = 3 and 4; two of
them (seeds 0 and 1) OR-ed at k = 3; the jaccard mode at 0.8.
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import numpy as np

from simdb.errors import InvalidParameter
from simdb.measure.bench import machine
from simdb.measure.calibrate import close_pairs, jaccard, lsh_pairs, similar_pairs
from simdb.measure.quality import plain_set_simhash
from simdb.sketch.features import EmptyDocument, Features, feature_hashes
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, UInt64Array, sketch
from simdb.sketch.onebit import BITS, from_minima
from simdb.sketch.simhash import DEFAULT_MAX_DISTANCE, fingerprints
from simdb.sources.readers import Document

Pair = tuple[int, int]
Edit = Callable[[random.Random, str], str]

KB = 1024
BANDS = (("1-2 KB", 1 * KB, 2 * KB), ("2-10 KB", 2 * KB, 10 * KB), ("10-200 KB", 10 * KB, 200 * KB))
DEFAULT_SAMPLE = 300  # originals per size band
DEFAULT_PRECISION_THRESHOLD = 0.5
LSH_THRESHOLD = 0.8  # the jaccard mode's comparison row
SENTENCE_WORDS = 12
_WORD = re.compile(r"\w+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def _vocabulary(text: str) -> list[str]:
    """The document's distinct words, in a fixed order (replacements are drawn from them)."""
    return sorted(set(_WORD.findall(text))) or ["simdb"]


def _other_word(rng: random.Random, vocabulary: list[str], old: str) -> str:
    """A word of the vocabulary other than `old` (ignoring case), or `old` + "x" if it has none."""
    for _ in range(8):
        word = rng.choice(vocabulary)
        if word.casefold() != old.casefold():
            return word
    return old + "x"


def _words(rng: random.Random, vocabulary: list[str], count: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(count))


def replace_words(rng: random.Random, text: str, count: int) -> str:
    """`text` with `count` of its words (at distinct places) replaced by other words of it; the
    rest of the text, white space and punctuation included, as it was."""
    spans = [match.span() for match in _WORD.finditer(text)]
    vocabulary = _vocabulary(text)
    pieces, at = [], 0
    for number in sorted(rng.sample(range(len(spans)), min(count, len(spans)))):
        start, end = spans[number]
        pieces += [text[at:start], _other_word(rng, vocabulary, text[start:end])]
        at = end
    return "".join([*pieces, text[at:]])


def one_word(rng: random.Random, text: str) -> str:
    """A word replaced."""
    return replace_words(rng, text, 1)


def three_words(rng: random.Random, text: str) -> str:
    """Three words replaced, at three random places."""
    return replace_words(rng, text, 3)


def one_percent(rng: random.Random, text: str) -> str:
    """1% of the words (at least one) replaced."""
    return replace_words(rng, text, max(1, round(0.01 * len(_WORD.findall(text)))))


def one_line(rng: random.Random, text: str) -> str:
    """A line that holds words replaced by as many other words of the document, in random order."""
    lines = text.splitlines(keepends=True)
    worded = [number for number, line in enumerate(lines) if _WORD.search(line)]
    if not worded:
        return one_word(rng, text)
    number = rng.choice(worded)
    line = lines[number]
    ending = line[len(line.rstrip("\r\n")) :]
    lines[number] = _words(rng, _vocabulary(text), len(_WORD.findall(line))) + ending
    return "".join(lines)


def sentence_appended(rng: random.Random, text: str) -> str:
    """A sentence of SENTENCE_WORDS words of the document appended on a line of its own."""
    sentence = _words(rng, _vocabulary(text), SENTENCE_WORDS)
    return text.rstrip("\n") + "\n" + sentence[:1].upper() + sentence[1:] + ".\n"


def paragraph_moved(rng: random.Random, text: str) -> str:
    """A paragraph (text between blank lines) moved to another place; a line, if the text has
    fewer than three paragraphs."""
    parts = _PARAGRAPH_BREAK.split(text)
    joint = "\n\n"
    if len(parts) < 3:
        parts, joint = text.splitlines(), "\n"
    if len(parts) < 2:
        return one_word(rng, text)
    source = rng.randrange(len(parts))
    moved = parts.pop(source)
    target = rng.choice([place for place in range(len(parts) + 1) if place != source])
    parts.insert(target, moved)
    return joint.join(parts)


def reflowed(rng: random.Random, text: str) -> str:
    """White space and case reflowed: the words refilled into lines of a random width (40-100),
    and one line in ten upper-cased. Word and char features see the same shingles."""
    width = rng.randint(40, 100)
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line.upper() if rng.random() < 0.1 else line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n".join(lines) + "\n"


KINDS: dict[str, Edit] = {
    "word": one_word,
    "line": one_line,
    "sentence": sentence_appended,
    "3 words": three_words,
    "1% words": one_percent,
    "paragraph": paragraph_moved,
    "reflow": reflowed,
}


@dataclass
class Sketches:
    """Every fingerprint of every document of the corpus, by position."""

    simhash: list[int]  # spec v2, 64 bits: simdb's default before one-bit MinHash
    second_simhash: list[int]  # the high half of spec v2 at 128 bits: an independent SimHash
    plain: list[int]  # quality.plain_set_simhash (word features only)
    onebit: list[int]  # one-bit MinHash, seed 0
    second_onebit: list[int]  # one-bit MinHash, seed 1
    signatures: list[UInt64Array]  # MinHash sketches (signature spec v2) for the jaccard mode
    _near: dict[tuple[str, int], set[Pair]] = field(default_factory=dict)

    def near(self, name: str, k: int) -> set[Pair]:
        """The pairs whose fingerprints `name` are within k bits (computed once each)."""
        if (name, k) not in self._near:
            prints: list[int] = getattr(self, name)
            self._near[(name, k)] = set(close_pairs(np.array(prints, dtype=np.uint64), k))
        return self._near[(name, k)]


def simhash_k3(s: Sketches) -> set[Pair]:
    """SimHash spec v2, 64 bits, within 3 bits: the default before one-bit MinHash."""
    return s.near("simhash", 3)


def plain_simhash(s: Sketches) -> set[Pair]:
    """The hand-written baseline: a textbook set SimHash of word n-grams, within 3 bits."""
    return s.near("plain", 3)


def simhash_k6(s: Sketches) -> set[Pair]:
    """Spec v2 searched twice as far: within 6 bits (more tables, shorter prefixes)."""
    return s.near("simhash", 6)


def two_simhashes(s: Sketches) -> set[Pair]:
    """Two independent 64-bit SimHashes (the halves of spec v2 at 128 bits), either within 3."""
    return s.near("simhash", 3) | s.near("second_simhash", 3)


def onebit_within(k: int) -> Callable[[Sketches], set[Pair]]:
    """One-bit MinHash (simdb.sketch.onebit, seed 0) as the 64-bit fingerprint, within k bits."""
    return lambda s: s.near("onebit", k)


def two_onebits(s: Sketches) -> set[Pair]:
    """Two one-bit MinHashes (seeds 0 and 1), either within 3 bits: LSH's OR of two tables."""
    return s.near("onebit", 3) | s.near("second_onebit", 3)


def jaccard_bands(s: Sketches) -> set[Pair]:
    """The jaccard mode at threshold 0.8, as its index works: a shared band key, then its check."""
    return lsh_pairs(s.signatures, LSH_THRESHOLD)


METHODS: dict[str, Callable[[Sketches], set[Pair]]] = {
    f"one-bit MinHash, k={DEFAULT_MAX_DISTANCE} (default)": onebit_within(DEFAULT_MAX_DISTANCE),
    "SimHash v2, k=3 (former default)": simhash_k3,
    "plain set SimHash, k=3": plain_simhash,
    "SimHash v2, k=6": simhash_k6,
    "2 SimHashes OR-ed, k=3": two_simhashes,
    **{f"one-bit MinHash, k={k}": onebit_within(k) for k in (3, 4) if k != DEFAULT_MAX_DISTANCE},
    "2 one-bit MinHashes OR-ed, k=3": two_onebits,
    f"jaccard mode bands, t={LSH_THRESHOLD}": jaccard_bands,
}
_WORD_ONLY = {"plain set SimHash, k=3"}  # the textbook baseline is of word n-grams


@dataclass
class MethodEdits:
    """One method on the corpus: recall by kind and band, precision overall and by band."""

    method: str
    recall: dict[str, float]  # by kind, all bands
    recall_by_band: dict[str, dict[str, float]]  # band: kind: recall
    recall_band: dict[str, float]  # band: recall of all kinds
    recall_all: float
    pairs: int  # pairs of the corpus reported
    precision: float  # share of them at exact Jaccard >= threshold
    precision_by_band: dict[str, float]  # a pair belongs to the band of its smaller document


@dataclass
class EditsBench:
    """`simdb bench --edits FOLDER`: planted single edits, every method."""

    folder: str
    features: str
    threshold: float
    seed: int
    files_read: int
    bands: dict[str, dict[str, int]]  # band: originals drawn, their bytes, files of the band read
    copies: int
    similar_pairs: int  # pairs of the corpus at exact Jaccard >= threshold
    planted_jaccard: dict[str, float]  # kind: median exact Jaccard of original and copy
    moved_bits: dict[str, dict[str, float]]  # fingerprint: kind: median Hamming distance
    methods: list[MethodEdits]
    machine: dict[str, object] = field(default_factory=machine)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    def lines(self) -> list[str]:
        originals = sum(band["files"] for band in self.bands.values())
        lines = [
            f"planted edits in {self.folder}: {originals} files of {self.files_read} read, one copy "
            f"per kind each ({self.copies} copies), {self.features} shingles, seed {self.seed}",
            "  ".join(
                f"{name}: {band['files']} files ({band['bytes']:,} bytes; {band['in_folder']} in the folder)"
                for name, band in self.bands.items()
            ),
            f"recall by kind of edit (all bands); precision: pairs reported at exact Jaccard >= "
            f"{self.threshold} ({self.similar_pairs} such pairs in the corpus)",
        ]
        kinds = list(KINDS)
        lines.append(
            f"  {'method':<32}"
            + "".join(f"{kind:>10}" for kind in kinds)
            + f"{'all':>8}{'pairs':>8}{'prec':>7}"
        )
        for m in self.methods:
            cells = "".join(f"{m.recall[kind]:>10.3f}" for kind in kinds)
            lines.append(f"  {m.method:<32}{cells}{m.recall_all:>8.3f}{m.pairs:>8}{m.precision:>7.3f}")
        lines.append("recall by size band (all kinds); precision by the band of a pair's smaller file")
        bands = list(self.bands)
        lines.append(f"  {'method':<32}" + "".join(f"{band + ' rec':>14}{'prec':>7}" for band in bands))
        for m in self.methods:
            cells = "".join(
                f"{m.recall_band[band]:>14.3f}{m.precision_by_band[band]:>7.3f}" for band in bands
            )
            lines.append(f"  {m.method:<32}{cells}")
        lines.append(
            "  median exact Jaccard of a copy: "
            + ", ".join(f"{kind} {j:.3f}" for kind, j in self.planted_jaccard.items())
        )
        for name, moved in self.moved_bits.items():
            lines.append(
                f"  median bits moved, {name}: " + ", ".join(f"{kind} {d:g}" for kind, d in moved.items())
            )
        return lines


def band_of(size: int) -> str | None:
    """The size band of a document of `size` bytes, None outside them all."""
    return next((name for name, low, high in BANDS if low <= size < high), None)


def draw(
    documents: Iterable[Document], sample: int, rng: random.Random
) -> tuple[dict[str, list[Document]], Counter[str], int]:
    """A uniform random sample of `sample` documents of each size band (reservoir sampling, so
    only the sample is held), the documents of each band read, and all documents read."""
    kept: dict[str, list[Document]] = {name: [] for name, _, _ in BANDS}
    seen: Counter[str] = Counter()
    read = 0
    for document in documents:
        read += 1
        band = band_of(len(document.text.encode("utf-8")))
        if band is None or not _WORD.search(document.text):
            continue
        seen[band] += 1
        if len(kept[band]) < sample:
            kept[band].append(document)
        elif (slot := rng.randrange(seen[band])) < sample:
            kept[band][slot] = document
    return kept, seen, read


def _sketches(texts: list[str], hashes: list[UInt64Array], features: Features) -> Sketches:
    """Every fingerprint of each document (texts and their shingle hashes, in the same order)."""
    wide = fingerprints(texts, features, 2, 128)
    # One-bit MinHash with seed s is the lowest bits of MinHash values 64s..64s+63 (simdb.sketch.onebit's
    # spec; tests/unit/test_onebit.py checks it): the jaccard mode's signatures hold seeds 0 and 1.
    signatures = [sketch(np.unique(h), DEFAULT_PERMUTATIONS) for h in hashes]
    low = (1 << 64) - 1
    return Sketches(
        simhash=[int(value or 0) & low for value in wide],
        second_simhash=[int(value or 0) >> 64 for value in wide],
        plain=[plain_set_simhash(text, features.n) for text in texts] if features.kind == "word" else [],
        onebit=[from_minima(values[:BITS]) for values in signatures],
        second_onebit=[from_minima(values[BITS : 2 * BITS]) for values in signatures],
        signatures=signatures,
    )


def bench_edits(
    documents: Iterable[Document],
    folder: str,
    features: Features,
    sample: int = DEFAULT_SAMPLE,
    threshold: float = DEFAULT_PRECISION_THRESHOLD,
    seed: int = 0,
    progress: Callable[[str], object] | None = None,
) -> EditsBench:
    """Plant one copy per kind of edit of `sample` random documents per size band (by `seed`),
    and measure every method's recall of them and precision over all pairs."""
    if features.binary:
        raise InvalidParameter(
            f"--edits plants edits in text, not {features} features", "use word:N or char:N features"
        )
    say = progress or (lambda line: None)
    rng = random.Random(seed)  # noqa: S311 (a reproducible benchmark, not a secret)
    say(f"reading {folder} and drawing {sample} files per size band")
    drawn, seen, read = draw(documents, sample, rng)
    texts: list[str] = []
    bands: list[str] = []
    planted: list[tuple[int, int, str]] = []  # original, copy, kind
    for band, chosen in drawn.items():
        for document in chosen:
            original = len(texts)
            texts.append(document.text)
            bands.append(band)
            for kind, edit in KINDS.items():
                planted.append((original, len(texts), kind))
                texts.append(edit(rng, document.text))
                bands.append(band)
    say(f"fingerprinting {len(texts)} documents (originals and copies) with every method")
    hashes = [_hashes(text, features) for text in texts]
    sketches = _sketches(texts, hashes, features)
    sets = [frozenset(h.tolist()) for h in hashes]
    say(f"exact Jaccard: every pair of the {len(sets)} shingle sets at >= {threshold}")
    truth = set(similar_pairs(sets, threshold))
    methods = []
    for name, method in METHODS.items():
        if name in _WORD_ONLY and features.kind != "word":
            continue
        say(f"pairs of {name}")
        methods.append(_scored(name, method(sketches), planted, bands, truth))
    moved = {
        "SimHash v2": _moved(sketches.simhash, planted),
        "one-bit MinHash": _moved(sketches.onebit, planted),
    }
    return EditsBench(
        folder=folder,
        features=str(features),
        threshold=threshold,
        seed=seed,
        files_read=read,
        bands={
            name: {
                "files": len(drawn[name]),
                "bytes": sum(len(d.text.encode("utf-8")) for d in drawn[name]),
                "in_folder": seen[name],
            }
            for name, _, _ in BANDS
        },
        copies=len(planted),
        similar_pairs=len(truth),
        planted_jaccard={
            kind: statistics.median(
                [jaccard(sets[a], sets[b]) for a, b, each in planted if each == kind] or [1.0]
            )
            for kind in KINDS
        },
        moved_bits=moved,
        methods=methods,
    )


def _hashes(text: str, features: Features) -> UInt64Array:
    """The document's shingle hashes. None is empty (a drawn document has a word character and
    its copies keep their words); should one be, a lone 0 stands in rather than a shifted corpus."""
    try:
        return feature_hashes(text, features)
    except EmptyDocument:
        return np.zeros(1, dtype=np.uint64)


def _moved(prints: list[int], planted: list[tuple[int, int, str]]) -> dict[str, float]:
    """Median Hamming distance of original and copy, by kind of edit."""
    return {
        kind: float(
            statistics.median(
                [(prints[a] ^ prints[b]).bit_count() for a, b, each in planted if each == kind] or [0]
            )
        )
        for kind in KINDS
    }


def _scored(
    name: str, found: set[Pair], planted: list[tuple[int, int, str]], bands: list[str], truth: set[Pair]
) -> MethodEdits:
    """Recall of the planted pairs by kind and band, precision of all pairs found."""
    hits: Counter[tuple[str, str]] = Counter()
    totals: Counter[tuple[str, str]] = Counter()
    for original, copy, kind in planted:
        totals[(bands[original], kind)] += 1
        hits[(bands[original], kind)] += (original, copy) in found
    names = [band for band, _, _ in BANDS]
    by_band = {
        band: {kind: hits[(band, kind)] / totals[(band, kind)] for kind in KINDS if totals[(band, kind)]}
        for band in names
    }
    reported: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for a, b in found:
        smaller = min(bands[a], bands[b], key=names.index)
        reported[smaller] += 1
        right[smaller] += (a, b) in truth
    return MethodEdits(
        method=name,
        recall={
            kind: _share(sum(hits[(b, kind)] for b in names), sum(totals[(b, kind)] for b in names))
            for kind in KINDS
        },
        recall_by_band=by_band,
        recall_band={
            band: _share(sum(hits[(band, k)] for k in KINDS), sum(totals[(band, k)] for k in KINDS))
            for band in names
        },
        recall_all=_share(sum(hits.values()), sum(totals.values())),
        pairs=len(found),
        precision=_share(sum(right.values()), len(found)),
        precision_by_band={band: _share(right[band], reported[band]) for band in names},
    )


def _share(part: int, whole: int) -> float:
    """part / whole, and 1.0 for nothing out of nothing (no pairs found: no false ones)."""
    return part / whole if whole else 1.0
