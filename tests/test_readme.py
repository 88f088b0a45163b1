"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from simdb.bits import to_signed
from simdb.simhash import fingerprint

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_python_example_runs(dsn: str, capsys: object) -> None:
    # the stand-alone example; the SQLAlchemy and Alembic fragments run in test_example_app.py
    (example,) = [
        block
        for block in re.findall(r"```python\n(.*?)```", README, flags=re.S)
        if "ensure_schema(conn)" in block
    ]
    exec(compile(example.replace("postgresql://localhost/mydb", dsn), "README.md", "exec"), {})
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM simdb.docs").fetchone() == (2,)
        assert conn.execute("SELECT key FROM simdb.similar_key('pages', 'a', 0.9)").fetchall() == [("a",)]


def test_signed_example_and_spec_example(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    assert '`simdb fingerprint --text "hello world"` prints `ba9b091b33c2300c`' in README
    assert fingerprint("hello world") == 0xBA9B091B33C2300C
    signed = int(re.search(r"stored as\n`(-\d+)`", README).group(1))  # type: ignore[union-attr]
    assert signed == to_signed(0xA70392059DDFCBCE)
    row = conn.execute("SELECT simdb.from_hex('a70392059ddfcbce'), simdb.to_hex(%s)", (signed,)).fetchone()
    assert row == (signed, "a70392059ddfcbce")
