"""Fingerprints in and out: query --limit/--format, fingerprint --file -, export, and ingest of
fingerprints computed elsewhere."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from psycopg import sql
from support import Conn, simdb

from simdb.sketch.bits import to_signed

WORDS = [
    "rivers",
    "bridges",
    "towns",
    "markets",
    "bells",
    "harbours",
    "ships",
    "lanterns",
    "gardens",
    "orchards",
]


def _texts() -> dict[str, str]:
    base = " ".join(WORDS[(i * 3) % 10] + str(i % 7) for i in range(120))
    return {f"k{n}": base + " extra" * n for n in range(4)} | {"other": "a completely different text " * 9}


def _ingest(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, *options: str) -> None:
    rows = [json.dumps({"key": key, "text": text}) for key, text in _texts().items()]
    (tmp_path / "docs.jsonl").write_text("\n".join(rows))
    assert simdb(capsys, "create", name, *options)[0] == 0
    assert simdb(capsys, "ingest", name, str(tmp_path / "docs.jsonl"))[0] == 0


def test_query_limit_and_formats_and_stdin(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    _ingest(capsys, tmp_path, "docs")
    code, table, _ = simdb(capsys, "query", "docs", "--key", "k0")
    keys = [line.split()[-1] for line in table.splitlines()[1:]]
    assert code == 0 and len(keys) >= 3 and keys[0] == "k0"
    assert (
        simdb(capsys, "query", "docs", "--key", "k0", "--limit", "2", "--json")[1]
        == json.dumps(json.loads(simdb(capsys, "query", "docs", "--key", "k0", "--json")[1])[:2]) + "\n"
    )
    out = simdb(capsys, "query", "docs", "--key", "k0", "--format", "csv", "--limit", "2")[1]
    header, *rows = csv.reader(io.StringIO(out))
    assert header == ["key", "distance"] and [row[0] for row in rows] == keys[:2]
    out = simdb(capsys, "query", "docs", "--key", "k0", "--format", "jsonl")[1]
    assert [json.loads(line)["key"] for line in out.splitlines()] == keys
    assert all(isinstance(json.loads(line)["distance"], int) for line in out.splitlines())

    text = _texts()["k1"]
    printed = simdb(capsys, "fingerprint", "--text", text)[1]
    assert simdb(capsys, "fingerprint", "--file", "-", stdin=text.encode()) == (0, printed, "")
    assert simdb(capsys, "query", "docs", "--file", "-", "--limit", "1", stdin=text.encode())[1].splitlines()[
        1
    ].split() == ["0", "k1"]
    assert simdb(capsys, "fingerprint", "--file", "-", stdin=b"") == (
        1,
        "",
        "simdb: error: stdin has no word characters, so it has no fingerprint (give a document with some text)\n",
    )


@pytest.mark.parametrize("mode", ["simhash", "jaccard"])
@pytest.mark.parametrize("format_", ["csv", "jsonl"])
def test_an_export_loads_into_another_index_unchanged(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path, mode: str, format_: str
) -> None:
    _ingest(capsys, tmp_path, "docs", "--mode", mode)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "libz.so.1.2.13").write_text(_texts()["k2"] + " as a file")
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "files"), "--relative-to", str(tmp_path))[0] == 0
    code, exported, err = simdb(capsys, "export", "docs", "--format", format_)
    assert code == 0, err
    column = "fingerprint" if mode == "simhash" else "signature"
    if format_ == "csv":
        rows = list(csv.DictReader(io.StringIO(exported)))
        assert list(rows[0]) == ["key", column, "size", "extension"]
    else:
        rows = [json.loads(line) for line in exported.splitlines()]
    assert [row["key"] for row in rows] == sorted([*_texts(), "files/libz.so.1.2.13"])
    (tmp_path / f"export.{format_}").write_text(exported)
    assert simdb(capsys, "create", "copy", "--mode", mode)[0] == 0
    code, out, err = simdb(
        capsys, "ingest", "copy", str(tmp_path / f"export.{format_}"), "--fingerprint-field", column
    )
    assert code == 0 and out.startswith("ingested 6 documents: 6 new"), err

    def stored(name: str) -> list[tuple[object, ...]]:  # size and extension carried too
        statement = sql.SQL("SELECT key, {}, size, extension FROM simdb.{} ORDER BY key")
        return conn.execute(statement.format(sql.Identifier(column), sql.Identifier(name))).fetchall()

    assert stored("copy") == stored("docs")
    assert (
        simdb(capsys, "query", "copy", "--key", "k0")[1] == simdb(capsys, "query", "docs", "--key", "k0")[1]
    )


def test_fingerprints_computed_elsewhere_are_checked(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    value = 0xF0F0_0000_1234_ABCD
    lines = [
        {"key": "hex", "fp": f"{value:016x}"},
        {"key": "unsigned", "fp": value},
        {"key": "signed", "fp": to_signed(value)},
    ]
    (tmp_path / "good.jsonl").write_text("\n".join(map(json.dumps, lines)))
    assert (
        simdb(capsys, "ingest", "fps", str(tmp_path / "good.jsonl"), "--fingerprint-field", "fp", "--create")[
            0
        ]
        == 0
    )
    assert set(conn.execute("SELECT key, fingerprint, size FROM simdb.fps").fetchall()) == {
        (key, to_signed(value), None) for key in ("hex", "unsigned", "signed")
    }
    bad = [{"key": "long", "fp": "1" * 17}, {"key": "big", "fp": 2**64}, {"key": "word", "fp": True}]
    (tmp_path / "bad.jsonl").write_text("\n".join(map(json.dumps, bad)))
    code, _, err = simdb(capsys, "ingest", "fps", str(tmp_path / "bad.jsonl"), "--fingerprint-field", "fp")
    assert code == 1 and err == (
        f"simdb: error: {tmp_path / 'bad.jsonl'}:1: field 'fp': bad fingerprint '11111111111111111'"
        " (give 1 to 16 hex digits, e.g. 3f2a9c0d11e4b7a8)\n"
    )
    code, out, _ = simdb(
        capsys, "ingest", "fps", str(tmp_path / "bad.jsonl"), "--fingerprint-field", "fp", "--skip-errors"
    )
    assert code == 0 and "skipped 3 (3 malformed)" in out
    code, _, err = simdb(capsys, "ingest", "fps", str(tmp_path / "good.jsonl"), "--fingerprint-field", "nope")
    assert (
        code == 1 and "no field 'nope' (fields: key, fp) (name the right one with --fingerprint-field)" in err
    )
    (tmp_path / "a.txt").write_text("plain text")
    code, _, err = simdb(capsys, "ingest", "fps", str(tmp_path / "a.txt"), "--fingerprint-field", "fp")
    assert code == 1 and "is read as text, which has no fields" in err
    assert conn.execute("SELECT count(*) FROM simdb.fps").fetchone() == (3,)  # nothing else stored

    assert simdb(capsys, "create", "sigs", "--mode", "jaccard")[0] == 0
    (tmp_path / "short.jsonl").write_text(json.dumps({"key": "s", "sig": [1, 2, 3]}))
    code, _, err = simdb(
        capsys, "ingest", "sigs", str(tmp_path / "short.jsonl"), "--fingerprint-field", "sig"
    )
    assert code == 1 and "field 'sig': a signature of 3 values for index 'sigs'" in err
