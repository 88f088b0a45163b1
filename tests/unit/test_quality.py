"""simdb bench --quality: every figure equals a brute-force count over all pairs."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from support import jaccard_corpus, simdb

from simdb.measure.quality import MAX_K, plain_set_simhash
from simdb.sketch.features import feature_hashes
from simdb.sketch.simhash import fingerprint, fingerprint_bytes


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


def _words_text(rng: random.Random, size: int) -> str:
    """Text of random words, about `size` bytes: lines of 10 words, paragraphs of 5 lines."""
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(" ".join(f"w{rng.randrange(3000)}" for _ in range(10)))
        if len(lines) % 6 == 5:
            lines.append("")
    return "\n".join(lines) + "\n"


def test_planted_edits_report_every_kind_band_and_method(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from simdb.measure.edits import BANDS, KINDS, METHODS

    rng = random.Random(4)
    for number, size in enumerate([1500, 1600, 1700, 5000, 6000, 7000, 15_000, 20_000, 25_000, 300]):
        (tmp_path / f"f{number}.txt").write_text(_words_text(rng, size))
    (tmp_path / "marks.txt").write_text("-- !! ..\n" * 200)  # 1.8 KB without a word: not drawn
    code, out, _ = simdb(capsys, "bench", "--edits", str(tmp_path), "--sample", "2", "--json")
    assert code == 0
    result = json.loads(out)
    names = [name for name, _, _ in BANDS]
    assert result["files_read"] == 11 and result["copies"] == 6 * len(KINDS)
    assert result["threshold"] == 0.5 and result["seed"] == 0 and result["features"] == "word:3"
    assert [(name, band["files"], band["in_folder"]) for name, band in result["bands"].items()] == [
        (name, 2, 3) for name in names
    ]
    assert set(result["machine"]) == {"cpu", "cores", "python", "os"}
    assert list(result["planted_jaccard"]) == list(KINDS)
    assert result["similar_pairs"] >= 6 * 28  # each file and its 7 copies
    assert [m["method"] for m in result["methods"]] == list(METHODS)
    for method in result["methods"]:
        assert list(method["recall"]) == list(KINDS)
        assert list(method["recall_band"]) == list(method["precision_by_band"]) == names
        assert all(list(by_kind) == list(KINDS) for by_kind in method["recall_by_band"].values())
        assert all(0 <= value <= 1 for value in [*method["recall"].values(), method["precision"]])

    code, out, _ = simdb(capsys, "bench", "--edits", str(tmp_path), "--sample", "2", "--threshold", "0.9")
    assert code == 0
    assert out.splitlines()[0] == (
        f"planted edits in {tmp_path}: 6 files of 11 read, one copy per kind each (42 copies), "
        "word:3 shingles, seed 0"
    )
    assert "pairs reported at exact Jaccard >= 0.9" in out.splitlines()[2]

    code, _, err = simdb(capsys, "bench", "--edits", str(tmp_path), "--features", "bytes:4")
    assert code == 1
    assert (
        err
        == "simdb: error: --edits plants edits in text, not bytes:4 features (use word:N or char:N features)\n"
    )
