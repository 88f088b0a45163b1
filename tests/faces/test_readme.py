"""The examples of the README and of docs/ run as written."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest
from support import ROOT, all_docs, code_blocks, doc, simdb

from simdb.sketch.bits import to_signed
from simdb.sketch.simhash import fingerprint

README = all_docs()  # README.md and docs/*.md


def test_python_example_runs(dsn: str, capsys: object) -> None:
    # the stand-alone example; the SQLAlchemy and Alembic fragments run in test_example_app.py
    (example,) = [block for block in code_blocks(doc("python"), "python") if "ensure_schema(conn)" in block]
    exec(compile(example.replace("postgresql://localhost/mydb", dsn), "README.md", "exec"), {})
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM simdb.docs").fetchone() == (2,)
        assert conn.execute("SELECT key FROM simdb.similar_key('pages', 'a', 0.9)").fetchall() == [("a",)]


def test_signed_example_and_spec_example(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    assert '`simdb fingerprint --fingerprint-spec 2 --text "hello world"` prints `ba9b091b33c2300c`' in README
    assert fingerprint("hello world") == 0xBA9B091B33C2300C
    signed = int(re.search(r"stored as\n`(-\d+)`", README).group(1))  # type: ignore[union-attr]
    assert signed == to_signed(0xA70392059DDFCBCE)
    row = conn.execute("SELECT simdb.from_hex('a70392059ddfcbce'), simdb.to_hex(%s)", (signed,)).fetchone()
    assert row == (signed, "a70392059ddfcbce")


def test_records_inside_a_folder_are_read_as_text_as_the_readme_says(
    capsys: pytest.CaptureFixture[str], conn: psycopg.Connection[tuple[object, ...]], tmp_path: Path
) -> None:
    """A .jsonl file inside a folder is one text document, a .jsonl file named is its records;
    the README's description of ingest says so."""
    assert "Inside a folder every file is one text document,\n  `.jsonl` and `.csv` files too" in README
    records = tmp_path / "data" / "notes.jsonl"
    records.parent.mkdir()
    records.write_text('{"key": "a", "text": "one record of words"}\n{"key": "b", "text": "another one"}\n')
    assert simdb(capsys, "ingest", "folder", str(records.parent), "--create")[0] == 0
    assert simdb(capsys, "ingest", "named", str(records), "--create")[0] == 0
    assert conn.execute("SELECT key FROM simdb.folder").fetchall() == [(str(records),)]
    assert conn.execute("SELECT key FROM simdb.named ORDER BY key").fetchall() == [("a",), ("b",)]


def _table_rows(heading: str) -> str:
    """The Markdown table that follows `heading` in the docs."""
    after = README.split(heading, 1)[1]
    return re.search(r"\n(\|.*?)\n\n", after, flags=re.S).group(1)  # type: ignore[union-attr]


def test_the_sql_face_lists_every_column_and_function(
    capsys: pytest.CaptureFixture[str], conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """Every column of an index's table, and every function in the schema simdb, has its row
    (`mtime_ns` and `simdb.explain_similar` had none)."""
    assert simdb(capsys, "create", "docs")[0] == 0
    columns = [
        name
        for (name,) in conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = 'simdb' AND table_name = 'docs' ORDER BY ordinal_position"
        )
    ]
    listed = re.findall(r"^\| `(\w+)` \|", _table_rows("An index `docs` is the table `simdb.docs`:"), re.M)
    assert listed == columns
    functions = {
        str(name)
        for (name,) in conn.execute(
            "SELECT DISTINCT proname FROM pg_proc WHERE pronamespace = 'simdb'::regnamespace"
        )
    }
    described = set(re.findall(r"`simdb\.(\w+)\(", _table_rows("Functions:")))
    assert functions - described == set()


def test_the_128_bit_example_creates_its_index_first(
    capsys: pytest.CaptureFixture[str], conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """The `near('wide', ...)` example runs as written once the command before it has run."""
    paragraph = README.split("**128 bits.**", 1)[1].split("\n\n", 1)[0]
    command = re.search(r"`simdb (create wide [^`]*)`", paragraph)
    assert command, "the 128-bit example does not say how the index 'wide' is made"
    assert simdb(capsys, *command.group(1).split())[0] == 0
    query = re.search(r"`(SELECT \* FROM simdb\.near\('wide'[^`]*)`", paragraph.replace("\n", " "))
    assert query and conn.execute(query.group(1)).fetchall() == []


def test_the_readmes_python_example_runs(
    dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's own Python example, on the database SIMDB_DSN names (as it says)."""
    (example,) = [block for block in code_blocks(doc(), "python") if "simdb.connect(" in block]
    monkeypatch.setenv("SIMDB_DSN", dsn)
    assert simdb(capsys, "init")[0] == 0
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("[Match(key='a', similarity=None, distance=") and "key='b'" not in printed


def test_every_page_of_docs_is_linked_from_the_readme_and_every_link_lands() -> None:
    pages = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
    assert len(pages) >= 8 and all(f"](docs/{page})" in doc() for page in pages)
    for source in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = source.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", text):
            if target.startswith("http"):
                continue
            landed = (source.parent / target).resolve() if target else source
            assert landed.exists(), f"{source.name}: no file {target}"
            if anchor and landed.suffix == ".md":
                headings = re.findall(r"^#{1,6} (.*)$", landed.read_text(encoding="utf-8"), flags=re.M)
                assert anchor in {_slug(heading) for heading in headings}, (
                    f"{source.name}: no #{anchor} in {target}"
                )


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
