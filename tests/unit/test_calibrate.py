"""simdb calibrate: Jaccard pairs found by prefix filtering equal all pairs by brute force."""

from __future__ import annotations

import json
import random
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from support import simdb

from simdb.measure.calibrate import MAX_K, THRESHOLDS, calibrate, similar_pairs
from simdb.sketch.bits import hamming
from simdb.sketch.features import Features, feature_hashes
from simdb.sketch.minhash import choose_banding, similarity, sketch
from simdb.sketch.simhash import simhash
from simdb.sources.readers import Document


def _corpus(count: int = 40) -> list[str]:
    rng = random.Random(9)
    texts = []
    for _ in range(count // 4):
        words = [f"w{rng.randrange(300)}" for _ in range(rng.randrange(20, 120))]
        texts.append(" ".join(words))
        for edits in (1, 3, 8):  # near-copies with a few words replaced
            copy = list(words)
            for _ in range(edits):
                copy[rng.randrange(len(copy))] = f"x{rng.randrange(1000)}"
            texts.append(" ".join(copy))
    return texts


def test_prefix_filtering_finds_every_similar_pair() -> None:
    sets = [frozenset(feature_hashes(text).tolist()) for text in _corpus()]
    expected = {
        (a, b): len(sets[a] & sets[b]) / len(sets[a] | sets[b])
        for a, b in combinations(range(len(sets)), 2)
        if len(sets[a] & sets[b]) / len(sets[a] | sets[b]) >= 0.8
    }
    assert similar_pairs(sets, 0.8) == pytest.approx(expected)


def test_precision_and_recall_equal_brute_force() -> None:
    texts = _corpus()
    result = calibrate((Document(str(i), t, 0) for i, t in enumerate(texts)), Features(), sample=1000)
    sets = [frozenset(feature_hashes(t).tolist()) for t in texts]
    prints = [simhash(feature_hashes(t)) for t in texts]
    signatures = [sketch(feature_hashes(t)) for t in texts]  # signature spec v2, as new indexes
    pairs = list(combinations(range(len(texts)), 2))
    jaccard = {p: len(sets[p[0]] & sets[p[1]]) / len(sets[p[0]] | sets[p[1]]) for p in pairs}
    distance = {p: hamming(prints[p[0]], prints[p[1]]) for p in pairs}
    for d in range(MAX_K + 1):
        at = [jaccard[p] for p in pairs if distance[p] == d]
        expected = (pytest.approx(np.median(at)), pytest.approx(np.percentile(at, 10))) if at else None
        assert result.meaning[d] == expected
    assert any(found is not None for found in result.meaning)
    for t in THRESHOLDS:
        similar = [p for p in pairs if jaccard[p] >= t]
        assert result.similar[t] == len(similar)
        for k in range(MAX_K + 1):
            close = [p for p in pairs if distance[p] <= k]
            hits = sum(jaccard[p] >= t for p in close)
            assert result.close[k] == len(close)
            assert result.precision[t][k] == pytest.approx(hits / len(close) if close else 1.0)
            assert result.recall[t][k] == pytest.approx(hits / len(similar) if similar else 1.0)
        banding = choose_banding(t)
        keys = [banding.keys(signature) for signature in signatures]
        banded = [
            p
            for p in pairs
            if set(keys[p[0]]) & set(keys[p[1]]) and similarity(signatures[p[0]], signatures[p[1]], 128) >= t
        ]
        hits = sum(jaccard[p] >= t for p in banded)
        assert result.jaccard_mode[t] == pytest.approx(
            (hits / len(banded) if banded else 1.0, hits / len(similar) if similar else 1.0)
        )


def test_calibrate_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for number, text in enumerate(_corpus()):
        (tmp_path / f"doc{number}.txt").write_text(text)
    code, out, _ = simdb(capsys, "calibrate", str(tmp_path), "--json")
    report = json.loads(out)
    assert code == 0 and report["documents"] == 40 and len(report["close_pairs"]) == MAX_K + 1
    code, out, _ = simdb(capsys, "calibrate", str(tmp_path), "--recall", "1.0", "--threshold", "0.8")
    assert code == 0 and out.splitlines()[-1].startswith(
        ("recommended: --max-distance", "no k up to 8 reaches")
    )


def test_the_sample_is_random_over_all_documents_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--sample N measures a uniform random sample of all documents, not the
    first N; the same seed gives the same sample."""
    from simdb.measure.calibrate import random_sample

    chosen, read = random_sample(range(10_000), 100, seed=1)
    assert read == 10_000 and len(chosen) == 100 and chosen == sorted(chosen)
    assert max(chosen) > 5_000 and sum(n < 100 for n in chosen) < 10  # the first 100 would be all
    assert (
        random_sample(range(10_000), 100, seed=1)[0] == chosen != random_sample(range(10_000), 100, seed=2)[0]
    )
    assert random_sample(range(5), 100) == ([0, 1, 2, 3, 4], 5)
    hits = [0] * 10
    for seed in range(2000):  # every position is kept with the same probability, 3/10
        for n in random_sample(range(10), 3, seed)[0]:
            hits[n] += 1
    assert all(abs(count / 2000 - 0.3) < 0.05 for count in hits), hits

    for number, text in enumerate(_corpus()):
        (tmp_path / f"doc{number}.txt").write_text(text)
    code, out, _ = simdb(capsys, "calibrate", str(tmp_path), "--sample", "10", "--json")
    report = json.loads(out)
    assert code == 0 and report["documents"] == 10 and report["documents_read"] == 40
    code, out, _ = simdb(capsys, "calibrate", str(tmp_path), "--sample", "10")
    assert out.startswith("10 documents (a random sample of the 40 read), features word:3;")


def test_nothing_to_calibrate_on_is_said_not_measured(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An empty folder, one document, or documents with no near-duplicate pair: one line saying
    there is nothing to calibrate on (no traceback, no precision and recall of 1 for every k)."""
    (tmp_path / "empty").mkdir()
    code, out, err = simdb(capsys, "calibrate", str(tmp_path / "empty"))
    assert (code, out) == (1, "") and err == (
        "simdb: error: no documents were read: nothing to calibrate on"
        " (give text files, folders, JSONL or CSV that hold the documents)\n"
    )
    (tmp_path / "one.txt").write_text("one two three four five six")
    code, out, err = simdb(capsys, "calibrate", str(tmp_path / "one.txt"), "--json")
    assert (code, out) == (1, "") and err == (
        "simdb: error: 1 of the 1 documents sampled has shingles under features word:3:"
        " nothing to calibrate on (calibration compares pairs: give at least two documents with text)\n"
    )
    (tmp_path / "two.txt").write_text("seven eight nine ten eleven twelve")
    code, out, err = simdb(capsys, "calibrate", str(tmp_path / "one.txt"), str(tmp_path / "two.txt"))
    assert (code, out) == (1, "") and err == (
        "simdb: error: no pair of the 2 documents sampled has Jaccard >= 0.8: nothing to calibrate on"
        " (give documents that include near-duplicates, or a larger --sample)\n"
    )


def test_no_recommendation_without_a_pair_at_the_threshold() -> None:
    """Pairs at Jaccard >= 0.8 but none at 0.95: no k is recommended for --threshold 0.95 (its
    recall has nothing to count), and its recall column shows a dash."""
    words = [f"w{n}" for n in range(40)]
    copy = list(words)
    copy[20] = "changed"
    documents = [Document("a", " ".join(words), 0), Document("b", " ".join(copy), 0)]
    result = calibrate(documents, Features(), sample=10, threshold=0.95)
    assert result.similar == {0.8: 1, 0.9: 0, 0.95: 0} and result.recommend() is None
    assert result.lines()[-1] == (
        "no pair in the sample has Jaccard >= 0.95: no k to recommend (try --threshold 0.8)"
    )
    assert result.lines()[2].split()[-2:] == ["1.000", "–"]
