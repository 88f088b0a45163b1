"""Retention goes by when a row was last seen, and a re-ingest can remove what left a folder
(`prune` used to remove unchanged files that had just been re-ingested)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Conn, simdb, untimed

WORDS = " ".join(f"w{number}" for number in range(80))


def _keys(conn: Conn) -> list[str]:
    return sorted(str(row[0]) for row in conn.execute("SELECT key FROM simdb.ret"))


def _folder(root: Path, names: list[str]) -> Path:
    root.mkdir(exist_ok=True)
    for name in names:
        (root / name).write_text(f"{name} {WORDS}")
    return root


def _an_hour_ago(conn: Conn) -> None:
    """As if the rows were written and last seen an hour ago (instead of waiting for it)."""
    conn.execute(
        "UPDATE simdb.ret SET added_at = added_at - interval '1 hour', seen_at = seen_at - interval '1 hour'"
    )


def test_prune_keeps_files_a_reingest_found_unchanged(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "folderA", ["d1.txt", "d2.txt", "d3.txt", "d4.txt"])
    assert simdb(capsys, "ingest", "ret", str(folder), "--create")[0] == 0
    _an_hour_ago(conn)
    (folder / "d1.txt").unlink()
    _folder(folder, ["d5.txt"])
    out = simdb(capsys, "ingest", "ret", str(folder))[1]
    assert untimed(out) == "ingested 4 documents: 1 new, 0 updated, 3 unchanged; skipped 0\n"
    assert simdb(capsys, "prune", "ret", "--older-than", "30m", "--yes")[:2] == (
        0,
        "pruned 1 rows not seen for 30m\n",
    )
    assert _keys(conn) == [str(folder / f"d{number}.txt") for number in (2, 3, 4, 5)]
    # records re-ingested unchanged are seen again too (not only files passed over unread)
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"key": "r1", "text": WORDS}) + "\n")
    simdb(capsys, "ingest", "ret", str(records))
    _an_hour_ago(conn)
    assert untimed(simdb(capsys, "ingest", "ret", str(records))[1]).endswith("1 unchanged; skipped 0\n")
    assert (
        simdb(capsys, "prune", "ret", "--older-than", "30m", "--yes")[1] == "pruned 4 rows not seen for 30m\n"
    )
    assert _keys(conn) == ["r1"]


def test_delete_missing_removes_what_left_the_folders_given(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "folderA", ["d1.txt", "d2.txt", "d3.txt", "empty.txt"])
    (folder / "empty.txt").write_text(f"{WORDS} empty later")
    beside = _folder(tmp_path / "folderA2", ["b1.txt"])  # a name that folderA's is the start of
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"key": f"{folder}/r1", "text": WORDS}) + "\n")
    assert simdb(capsys, "ingest", "ret", str(folder), str(beside), str(records), "--create")[0] == 0
    assert len(_keys(conn)) == 6
    (folder / "d1.txt").unlink()
    (folder / "empty.txt").write_text("")  # now skipped as empty: its old row goes too
    code, out, err = simdb(capsys, "ingest", "ret", str(folder), "--delete-missing")
    assert (code, err) == (0, "")
    assert untimed(out) == (
        "ingested 2 documents: 0 new, 0 updated, 2 unchanged; skipped 1 (1 empty); removed 3 missing\n"
    )  # d1.txt, empty.txt, and the record keyed inside the folder's scope
    assert _keys(conn) == sorted([str(beside / "b1.txt"), str(folder / "d2.txt"), str(folder / "d3.txt")])
    code, out, _ = simdb(capsys, "ingest", "ret", str(folder), "--delete-missing", "--json")
    assert json.loads(out)["removed"] == 0
    # a file that cannot be read makes its row look missing: nothing is removed then
    (folder / "d2.txt").unlink()
    (folder / "broken.txt").symlink_to(folder / "nowhere.txt")
    code, out, _ = simdb(capsys, "ingest", "ret", str(folder), "--delete-missing", "--skip-errors")
    assert code == 0 and "removed" not in out and str(folder / "d2.txt") in _keys(conn)
    assert simdb(capsys, "ingest", "ret", str(records), "--delete-missing") == (
        1,
        "",
        "simdb: error: --delete-missing removes the rows of files gone from the folders given; it does "
        "not apply to stdin or to JSONL/CSV records (give folders and text files, or remove records "
        "with `simdb delete`)\n",
    )
