"""Any file, not only text: bytes:N fingerprints, size and extension as second filters."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest
from support import Conn, simdb, untimed

from simdb.sketch.simhash import NEW_INDEX_SPEC, fingerprint_bytes


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
    assert (code, untimed(out)) == (
        0,
        "ingested 5 documents: 5 new, 0 updated, 0 unchanged; skipped 1 (1 empty)\n",
    )
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
    assert out == f"{fingerprint_bytes((binaries / 'a.bin').read_bytes(), 4, NEW_INDEX_SPEC):016x}\n"


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


def test_a_file_has_one_key_however_it_is_named(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bad/ok.txt`, `./bad/ok.txt` and the absolute path are one row, and
    ingesting `.` from two projects keeps both READMEs; --relative-to keys by a stated root."""
    for project in ("proj1", "proj2"):
        (tmp_path / project / "bad").mkdir(parents=True)
        (tmp_path / project / "README").write_text(f"the readme of {project} with a few more words")
        (tmp_path / project / "bad" / "ok.txt").write_text(f"an ordinary file in {project}, words")
    monkeypatch.chdir(tmp_path / "proj1")
    for named in (
        "bad/ok.txt",
        "./bad/ok.txt",
        str(tmp_path / "proj1" / "bad" / "ok.txt"),
        "bad/../bad/ok.txt",
    ):
        assert simdb(capsys, "ingest", "docs", named, "--create")[0] == 0
    assert simdb(capsys, "ingest", "docs", ".")[0] == 0
    monkeypatch.chdir(tmp_path / "proj2")
    assert simdb(capsys, "ingest", "docs", ".")[0] == 0
    stored = sorted(str(key) for (key,) in conn.execute("SELECT key FROM simdb.docs"))
    assert stored == sorted(
        str(tmp_path / project / name) for project in ("proj1", "proj2") for name in ("README", "bad/ok.txt")
    )
    code, _, err = simdb(capsys, "query", "docs", "--key", "./README")
    assert code == 1 and f"try --key {tmp_path / 'proj2' / 'README'}" in err

    assert simdb(capsys, "ingest", "rel", ".", "--relative-to", str(tmp_path), "--create")[0] == 0
    assert sorted(str(key) for (key,) in conn.execute("SELECT key FROM simdb.rel")) == [
        "proj2/README",
        "proj2/bad/ok.txt",
    ]
    code, _, err = simdb(capsys, "ingest", "rel", ".", "--relative-to", str(tmp_path / "proj1"))
    assert code == 1 and err == (
        f"simdb: error: . is outside --relative-to {tmp_path / 'proj1'}"
        " (give a folder that holds every source)\n"
    )


def test_unchanged_files_are_not_read_again(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """A re-ingest passes over files whose size and modification time are the
    stored ones, unread; a changed or touched file is read; --force reads them all."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(30):
        (folder / f"d{number}.txt").write_text(f"document {number} " + "with words of its own " * 20)
    assert simdb(capsys, "ingest", "docs", str(folder), "--create")[1].startswith(
        "ingested 30 documents: 30 new"
    )
    before = conn.execute("SELECT key, fingerprint, added_at FROM simdb.docs ORDER BY key").fetchall()
    same = folder / "d3.txt"  # new words of the same size under the old time: if read, it would change
    times = same.stat().st_atime_ns, same.stat().st_mtime_ns
    same.write_text(same.read_text().replace("words", "birds"))
    os.utime(same, ns=times)
    (folder / "d4.txt").write_text("document 4 rewritten: other words entirely, and more of them")
    os.utime(folder / "d5.txt", ns=(10**18, 10**18))  # touched: same content, new time
    code, out, err = simdb(capsys, "ingest", "docs", str(folder))
    assert (code, untimed(out)) == (
        0,
        "ingested 30 documents: 0 new, 2 updated, 28 unchanged; skipped 0\n",
    ), err
    after = dict(
        (key, (fp, at)) for key, fp, at in conn.execute("SELECT key, fingerprint, added_at FROM simdb.docs")
    )
    changed = {key for key, fp, at in before if after[key] != (fp, at)}
    assert changed == {str(folder / "d4.txt"), str(folder / "d5.txt")}
    assert conn.execute(
        "SELECT mtime_ns FROM simdb.docs WHERE key = %s", (str(folder / "d5.txt"),)
    ).fetchone() == (10**18,)
    code, out, _ = simdb(capsys, "ingest", "docs", str(folder), "--force")
    assert (code, untimed(out)) == (
        0,
        "ingested 30 documents: 0 new, 1 updated, 29 unchanged; skipped 0\n",
    )  # d3


def test_ingest_counts_the_bytes_it_read_and_the_bytes_it_passed_over_apart(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Two symbolic links to a file read, a 1 GiB sparse binary file (only its start is read, to
    see that it is binary) and, on the second run, unchanged files are passed over: their bytes
    are not counted as read (they made "40.5 MB" of one 13.5 MB file and two links)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    text = folder / "a.txt"
    text.write_text("a document with words of its own " * 30_000)  # 990,000 bytes
    (folder / "b.txt").symlink_to(text)
    (folder / "c.txt").symlink_to(text)
    sparse = folder / "sparse.img"
    with sparse.open("wb") as handle:
        handle.write(b"\0" * 16)
        handle.truncate(1 << 30)
    size = text.stat().st_size
    code, out, err = simdb(capsys, "ingest", "docs", str(folder), "--create", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["inserted"], report["skipped"]) == (1, {"another name of a file read": 2, "binary": 1})
    assert (report["bytes"], report["bytes_passed_over"]) == (size, 2 * size + (1 << 30))

    code, out, _ = simdb(capsys, "ingest", "docs", str(folder))
    assert code == 0
    lines = re.fullmatch(
        r"ingested 1 documents: 0 new, 0 updated, 1 unchanged; skipped 3 \(2 another name of a file "
        r"read, 1 binary\); 0\.0 MB read in [0-9.]+ s, [0-9.]+ MB/s; 1076\.7 MB passed over "
        r"\(skipped or unchanged\)\n",
        out,
    )
    assert lines, out
