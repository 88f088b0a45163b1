"""Helpers every test module shares: the connection type, running the CLI in-process, folders."""

from __future__ import annotations

import io
import os
import random
import re
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from simdb import cli
from simdb.modes import Index

Conn = psycopg.Connection[tuple[object, ...]]


def simdb(capsys: pytest.CaptureFixture[str], *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run `simdb ARGS` in-process; returns (exit code, stdout, stderr)."""
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        cli.run(list(args))
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    finally:
        sys.stdin = sys.__stdin__
    out, err = capsys.readouterr()
    return code, out, err


_RATE = re.compile(r"; [0-9.]+ MB in [0-9.]+ s, [0-9.]+ MB/s$", re.MULTILINE)


def untimed(out: str) -> str:
    """An ingest's output without its figures that vary from run to run (read MB, time, rate),
    which it must have."""
    text, found = _RATE.subn("", out)
    assert found, f"no '; N MB in T s, R MB/s' in {out!r}"
    return text


def traversable_tempdir(prefix: str) -> Path:
    """A fresh folder of our own that the embedded server's user can enter when we run as root."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755 if os.geteuid() == 0 else 0o700)
    return folder


WORDS = [f"w{i}" for i in range(5000)]


def _edited(rng: random.Random, words: list[str], share: float) -> list[str]:
    """A copy with `share` of its words replaced by random ones."""
    copy = list(words)
    for position in rng.sample(range(len(copy)), round(share * len(copy))):
        copy[position] = rng.choice(WORDS)
    return copy


def jaccard_corpus() -> dict[str, str]:
    """40 documents of 300 words, each with copies edited at 0% to 12%, plus 200 unrelated ones."""
    rng = random.Random(6)
    texts = {}
    for number in range(40):
        words = [rng.choice(WORDS) for _ in range(300)]
        texts[f"d{number}"] = " ".join(words)
        for share in (0.0, 0.01, 0.02, 0.04, 0.06, 0.12):
            texts[f"d{number}_e{round(share * 100):02d}"] = " ".join(_edited(rng, words, share))
    for number in range(200):
        texts[f"u{number}"] = " ".join(rng.choice(WORDS) for _ in range(300))
    return texts


def btree_values(conn: Conn, made: Index) -> dict[str, list[int]]:
    """What each of an index's B-trees holds for each row, by key: its expression, as the server
    stored it (its first key column), evaluated on the row; in the order of made.columns."""
    expressions = []
    for column in made.columns:
        row = conn.execute(
            "SELECT pg_get_indexdef(%s::regclass, 1, true)",
            (f'simdb."{made.name}_{column}"',),
        ).fetchone()
        assert row is not None and row[0], column
        expressions.append(sql.SQL(row[0]))
    rows = conn.execute(
        sql.SQL("SELECT key, {} FROM {}").format(sql.SQL(", ").join(expressions), made.table)
    ).fetchall()
    return {key: list(values) for key, *values in rows}
