"""Odd names, odd keys and odd files a new user's folders hold."""

from __future__ import annotations

import codecs
import gzip
import json
import os
from pathlib import Path

import pytest
from support import Conn, simdb, untimed

from simdb import ingest
from simdb.errors import InvalidParameter
from simdb.index import lifecycle as index
from simdb.index.modes.simhash import SimhashSpec
from simdb.sketch.bits import to_signed
from simdb.sketch.simhash import NEW_INDEX_SPEC, fingerprint

TEXT = " ".join(f"word{number}" for number in range(200))


def _rows(conn: Conn, table: str = "docs") -> dict[str, tuple[object, ...]]:
    found = conn.execute(f"SELECT key, fingerprint, size, extension FROM simdb.{table} ORDER BY key")
    return {str(row[0]): tuple(row[1:]) for row in found}


def test_a_file_name_that_is_not_utf8_is_skipped_and_counted(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Item 3: the name used to raise UnicodeEncodeError and abandon the whole folder."""
    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "good.txt").write_text(TEXT)
    with open(os.fsencode(folder) + b"/badname_\xff.txt", "wb") as bad:
        bad.write(b"words of a file whose name is not UTF-8")
    simdb(capsys, "create", "docs")
    for extra in ([], ["--skip-errors"]):
        code, out, err = simdb(capsys, "ingest", "docs", str(folder), *extra)
        assert (code, err) == (0, "")
        assert untimed(out).endswith("skipped 1 (1 name not storable as a key)\n"), out
    assert list(_rows(conn)) == [str(folder / "good.txt")]


def test_record_keys_postgresql_cannot_store_are_named_and_counted(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Item 4: a 10 KB key or a NUL in a key failed the batch inside the server, with no file:line,
    whatever --skip-errors said."""
    records = tmp_path / "records.jsonl"
    lines = [
        {"key": "fine", "text": TEXT},
        {"key": "k" * 10000, "text": TEXT + " long"},
        {"key": "nul\u0000key", "text": TEXT + " nul"},
        {"key": "also fine", "text": TEXT + " also"},
    ]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    simdb(capsys, "create", "docs")
    assert simdb(capsys, "ingest", "docs", str(records)) == (
        1,
        "",
        f"simdb: error: {records}:2: the key '{'k' * 77}...' is 10000 bytes in UTF-8, more than the "
        "2600 a key may have (fix the record or pick another --key-field)\n",
    )
    code, out, err = simdb(capsys, "ingest", "docs", str(records), "--skip-errors")
    assert (code, err) == (0, "")
    assert untimed(out) == "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 2 (2 malformed)\n"
    assert list(_rows(conn)) == ["also fine", "fine"]
    records.write_text(json.dumps({"key": "nul\u0000key", "text": TEXT}) + "\n")
    code, _, err = simdb(capsys, "ingest", "docs", str(records))
    assert code == 1 and err == (
        f"simdb: error: {records}:1: the key 'nul\\x00key' has a NUL character, which PostgreSQL text "
        "cannot hold (fix the record or pick another --key-field)\n"
    )


def test_an_unreadable_subfolder_is_named_like_an_unreadable_file(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Item 5: a subfolder that cannot be listed was passed over in silence ("skipped 0", rc 0).
    A path longer than the system allows cannot be listed, even by root."""
    top = tmp_path / "tree"
    top.mkdir()
    (top / "a.txt").write_text(TEXT)
    descriptor = os.open(top, os.O_RDONLY)
    try:
        for _ in range(18):  # 18 levels of 250 characters: past PATH_MAX (4096)
            os.mkdir("d" * 250, dir_fd=descriptor)
            deeper = os.open("d" * 250, os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = deeper
    finally:
        os.close(descriptor)
    simdb(capsys, "create", "docs")
    code, out, err = simdb(capsys, "ingest", "docs", str(top))
    assert (code, out) == (1, "")
    assert err.startswith(f"simdb: error: cannot read folder {top}/{'d' * 250}/") and err.endswith(
        ": File name too long (check the folder's permissions, or pass --skip-errors to count it and go on)\n"
    )
    code, out, err = simdb(capsys, "ingest", "docs", str(top), "--skip-errors")
    assert (code, err) == (0, "")
    assert untimed(out) == "ingested 1 documents: 1 new, 0 updated, 0 unchanged; skipped 1 (1 unreadable)\n"


def test_gzip_and_utf16_files_are_read_as_text(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Item 13: .gz files (and .jsonl.gz records) were skipped as binary, and UTF-16 text too."""
    folder = tmp_path / "packed"
    folder.mkdir()
    (folder / "plain.txt").write_text(TEXT)
    (folder / "packed.txt.gz").write_bytes(gzip.compress((TEXT + " packed").encode()))
    (folder / "wide.txt").write_bytes(codecs.BOM_UTF16_LE + (TEXT + " wide").encode("utf-16-le"))
    (folder / "wider.txt").write_bytes(codecs.BOM_UTF32_BE + (TEXT + " wider").encode("utf-32-be"))
    records = tmp_path / "records.jsonl.gz"
    records.write_bytes(gzip.compress(json.dumps({"key": "r1", "text": TEXT + " record"}).encode() + b"\n"))
    simdb(capsys, "create", "docs")
    code, out, err = simdb(capsys, "ingest", "docs", str(folder), str(records))
    assert (code, err) == (0, "")
    assert untimed(out) == "ingested 5 documents: 5 new, 0 updated, 0 unchanged; skipped 0\n"
    stored = _rows(conn)
    expected = {  # each file's size on disk, and its kind by the name it holds
        "plain.txt": (TEXT, "txt"),
        "packed.txt.gz": (TEXT + " packed", "txt"),
        "wide.txt": (TEXT + " wide", "txt"),
        "wider.txt": (TEXT + " wider", "txt"),
    }
    for name, (text, extension) in expected.items():
        size = (folder / name).stat().st_size
        assert stored[str(folder / name)] == (
            to_signed(fingerprint(text, spec=NEW_INDEX_SPEC)),
            size,
            extension,
        ), name
    assert stored["r1"][0] == to_signed(fingerprint(TEXT + " record", spec=NEW_INDEX_SPEC))
    (folder / "broken.txt.gz").write_bytes(gzip.compress(TEXT.encode())[:100])  # cut short
    code, out, err = simdb(capsys, "ingest", "docs", str(folder))
    assert (code, out) == (1, "") and err == (
        f"simdb: error: cannot read {folder / 'broken.txt.gz'}: Compressed file ended before the "
        "end-of-stream marker was reached (check that it is a whole gzip file)\n"
    )
    code, out, _ = simdb(capsys, "ingest", "docs", str(folder), "--skip-errors")
    assert code == 0 and untimed(out).endswith("skipped 1 (1 unreadable)\n")


def test_a_file_reached_under_several_names_is_ingested_once(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Item 14: every pair `simdb pairs` found in the shared-library folder was a file and its
    symbolic link; and libz.so.1 and libz.so.1.2.13 are one kind for --same-extension."""
    folder = tmp_path / "libs"
    folder.mkdir()
    outside = tmp_path / "outside.so.3"
    outside.write_text(TEXT + " outside")
    (folder / "libz.so.1.2.13").write_text(TEXT)
    (folder / "libz.so.1").symlink_to("libz.so.1.2.13")
    (folder / "libz.so").symlink_to(folder / "libz.so.1")  # a chain of links
    os.link(folder / "libz.so.1.2.13", folder / "hard.so.1.2.13")  # a second name of the same inode
    (folder / "out.so").symlink_to(outside)  # its target is not read under its own name: kept
    (folder / "out2.so").symlink_to(outside)  # ... once
    (folder / "libzz.so.1").write_text(TEXT)  # a copy, not a link: another file, of the same kind
    simdb(capsys, "create", "docs")
    code, out, err = simdb(capsys, "ingest", "docs", str(folder))
    assert (code, err) == (0, "")
    assert untimed(out) == (
        "ingested 3 documents: 3 new, 0 updated, 0 unchanged; skipped 4 (4 another name of a file read)\n"
    )
    stored = _rows(conn)
    assert sorted(stored) == [str(folder / name) for name in ("hard.so.1.2.13", "libzz.so.1", "out.so")]
    assert {row[2] for row in stored.values()} == {"so"}
    code, out, _ = simdb(capsys, "pairs", "docs", "--same-extension", "-k", "3")
    assert code == 0 and out.splitlines()[1].startswith(
        f"{folder / 'hard.so.1.2.13'},{folder / 'libzz.so.1'},"
    )
    # a link named beside its target on the command line is passed over too
    simdb(capsys, "create", "named")
    code, out, _ = simdb(capsys, "ingest", "named", str(folder / "libz.so"), str(folder / "libz.so.1.2.13"))
    assert untimed(out).endswith("skipped 1 (1 another name of a file read)\n")
    assert list(_rows(conn, "named")) == [str(folder / "libz.so.1.2.13")]


def test_store_refuses_a_key_postgresql_cannot_store_before_sending_the_batch(conn: Conn) -> None:
    """Item 4, for library callers: store() names the key instead of failing inside the server."""
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    with pytest.raises(InvalidParameter, match=r"the key 'bad\\x00key' has a NUL character"):
        ingest.store(conn, made, {"good": fingerprint(TEXT), "bad\0key": fingerprint(TEXT)})
    with pytest.raises(InvalidParameter, match="is 2601 bytes in UTF-8, more than the 2600 a key may have"):
        ingest.store(conn, made, {"é" + "k" * 2599: fingerprint(TEXT)})
    assert _rows(conn) == {}
    ingest.store(conn, made, {"k" * 2600: fingerprint(TEXT)})  # the longest key a row may have
    assert list(_rows(conn)) == ["k" * 2600]


def test_gzip_and_utf16_files_larger_than_the_batch_bytes_are_read_in_pieces_as_text(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """Items 7 and 13 together: a file over --batch-bytes is read a piece at a time when it is
    sketched, decompressed and decoded as a whole read would (the pieces are 1 MiB: past one)."""
    folder = tmp_path / "large"
    folder.mkdir()
    text = " ".join(f"token{number}" for number in range(250_000))  # 2.1 MB
    (folder / "big.txt.gz").write_bytes(gzip.compress(text.encode()))
    (folder / "wide.txt").write_bytes(codecs.BOM_UTF16_BE + (text + " wide").encode("utf-16-be"))
    simdb(capsys, "create", "docs")
    code, out, err = simdb(capsys, "ingest", "docs", str(folder), "--batch-bytes", "64K")
    assert (code, err) == (0, "")
    assert untimed(out) == "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 0\n"
    stored = _rows(conn)
    assert stored[str(folder / "big.txt.gz")][:3:2] == (
        to_signed(fingerprint(text, spec=NEW_INDEX_SPEC)),
        "txt",
    )
    assert stored[str(folder / "wide.txt")][0] == to_signed(fingerprint(text + " wide", spec=NEW_INDEX_SPEC))
