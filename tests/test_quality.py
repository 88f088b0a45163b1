"""simdb bench --quality: every figure equals a brute-force count over all pairs."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from support import jaccard_corpus, simdb

from simdb.measure.quality import MAX_K, plain_set_simhash
from simdb.simhash import feature_hashes, fingerprint, fingerprint_bytes


def _jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b)


def test_quality_figures_equal_brute_force(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    texts = dict(list(jaccard_corpus().items())[:80])
    for key, text in texts.items():
        (tmp_path / f"{key}.txt").write_text(text)
    code, out, _ = simdb(capsys, "bench", "--quality", str(tmp_path), "--json")
    assert code == 0
    corpus = json.loads(out)["corpora"][0]

    ordered = [texts[path.stem] for path in sorted(tmp_path.iterdir())]
    sets = [set(feature_hashes(text).tolist()) for text in ordered]
    pairs = list(itertools.combinations(range(len(ordered)), 2))
    truth = {(a, b) for a, b in pairs if _jaccard(sets[a], sets[b]) >= 0.8}
    assert corpus["documents"] == 80 and corpus["similar_pairs"] == len(truth) > 10

    prints = {
        "simdb spec v1": [fingerprint(text, spec=1) for text in ordered],
        "simdb spec v2": [fingerprint(text, spec=2) for text in ordered],
        "plain set-weighted": [plain_set_simhash(text) for text in ordered],
        "simdb spec v2, 128 bits": [fingerprint(text, spec=2, bits=128) for text in ordered],
        "plain set-weighted, 128 bits": [plain_set_simhash(text, bits=128) for text in ordered],
    }
    assert [m["method"] for m in corpus["methods"]] == list(prints)
    for measured in corpus["methods"]:
        values = prints[measured["method"]]
        assert len(measured["pairs"]) == MAX_K[measured["bits"]] + 1
        for k in range(MAX_K[measured["bits"]] + 1):
            within = [(a, b) for a, b in pairs if (values[a] ^ values[b]).bit_count() <= k]
            hits = len(truth.intersection(within))
            assert measured["pairs"][k] == len(within)
            assert measured["precision"][k] == pytest.approx(hits / len(within) if within else 1.0)
            assert measured["recall"][k] == pytest.approx(hits / len(truth))


def test_bytes_quality_counts_files_sharing_a_fingerprint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Mostly zeros with a distinct tail: spec v1 gives all the same fingerprint, v2 spreads them.
    rng = random.Random(3)
    for number in range(10):
        tail = rng.randbytes(300)
        (tmp_path / f"f{number}.bin").write_bytes(bytes(4000) + tail)
    assert len({fingerprint_bytes((tmp_path / f"f{n}.bin").read_bytes(), 4, 1) for n in range(10)}) == 1
    code, out, _ = simdb(capsys, "bench", "--quality", str(tmp_path), "--features", "bytes:4", "--json")
    assert code == 0
    methods = {m["method"]: m for m in json.loads(out)["corpora"][0]["methods"]}
    assert methods["simdb spec v1"]["largest_share"] == 1.0
    assert methods["simdb spec v1"]["unrelated_at_zero"] == 45
    v2 = {fingerprint_bytes((tmp_path / f"f{n}.bin").read_bytes(), 4, 2) for n in range(10)}
    assert methods["simdb spec v2"]["largest_share"] == pytest.approx(1 / len(v2))
