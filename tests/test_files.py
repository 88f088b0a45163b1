"""Any file, not only text: bytes:N fingerprints, size and extension as second filters."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from support import Conn, simdb

from simdb.simhash import fingerprint_bytes


@pytest.fixture
def binaries(tmp_path: Path) -> Path:
    rng = random.Random(3)
    folder = tmp_path / "files"
    folder.mkdir()
    blob = bytes(rng.randrange(256) for _ in range(20_000))
    (folder / "a.bin").write_bytes(blob)
    patched = bytearray(blob)
    patched[5000:5004] = b"\x00\x01\x02\x03"  # a small patch
    (folder / "a_patched.bin").write_bytes(bytes(patched))
    (folder / "a_copy.dat").write_bytes(blob)  # the same bytes, another extension
    (folder / "a_twice.bin").write_bytes(
        blob * 2
    )  # the same shingles twice: same fingerprint, twice the size
    (folder / "other.bin").write_bytes(bytes(rng.randrange(256) for _ in range(20_000)))
    (folder / "empty.bin").write_bytes(b"")
    return folder


def test_bytes_index_finds_binary_near_duplicates(
    capsys: pytest.CaptureFixture[str], conn: Conn, binaries: Path
) -> None:
    assert simdb(capsys, "create", "files", "--features", "bytes:4")[0] == 0
    code, out, _ = simdb(capsys, "ingest", "files", str(binaries))
    assert (code, out) == (0, "ingested 5 documents: 5 new, 0 updated, 0 unchanged; skipped 1 (1 empty)\n")
    stored = dict(conn.execute("SELECT key, extension || ':' || size FROM simdb.files").fetchall())
    assert stored[str(binaries / "a.bin")] == "bin:20000"
    assert stored[str(binaries / "a_copy.dat")] == "dat:20000"

    def keys(*args: str) -> list[str]:
        code, out, err = simdb(capsys, "query", "files", "--file", str(binaries / "a.bin"), "--json", *args)
        assert code == 0, err
        return sorted(Path(match["key"]).name for match in json.loads(out))

    assert keys() == ["a.bin", "a_copy.dat", "a_patched.bin", "a_twice.bin"]
    assert keys("--same-extension") == ["a.bin", "a_patched.bin", "a_twice.bin"]
    assert keys("--same-extension", "--size-ratio", "1.5") == ["a.bin", "a_patched.bin"]
    assert simdb(capsys, "query", "files", "--text", "x", "--same-extension")[0] == 2
    code, out, _ = simdb(capsys, "fingerprint", "--file", str(binaries / "a.bin"), "--features", "bytes:4")
    assert out == f"{fingerprint_bytes((binaries / 'a.bin').read_bytes(), 4):016x}\n"


def test_pairs_filters(capsys: pytest.CaptureFixture[str], conn: Conn, binaries: Path) -> None:
    simdb(capsys, "create", "files", "--features", "bytes:4")
    simdb(capsys, "ingest", "files", str(binaries))

    def pairs(*args: str) -> list[tuple[str, str]]:
        code, out, err = simdb(capsys, "pairs", "files", "--format", "jsonl", *args)
        assert code == 0, err
        return sorted(
            (Path(p["key_a"]).name, Path(p["key_b"]).name) for p in map(json.loads, out.splitlines())
        )

    everything = pairs()
    assert len(everything) == 6  # a, a_copy, a_patched, a_twice: every two of the four
    assert pairs("--same-extension") == [
        ("a.bin", "a_patched.bin"),
        ("a.bin", "a_twice.bin"),
        ("a_patched.bin", "a_twice.bin"),
    ]
    assert pairs("--same-extension", "--size-ratio", "1.5") == [("a.bin", "a_patched.bin")]
