"""Helpers every test module shares: the connection type, running the CLI in-process, folders."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from simdb import cli
from simdb.db.embedded import EmbeddedServer
from simdb.errors import DatabaseUnavailable
from simdb.index import catalog
from simdb.index import lifecycle as index
from simdb.index.modes import Index

Conn = psycopg.Connection[tuple[object, ...]]

ROOT = Path(__file__).resolve().parents[2]  # the checkout
TESTS = ROOT / "tests"


def doc(page: str = "README") -> str:
    """The text of README.md, or of docs/PAGE.md."""
    path = ROOT / "README.md" if page == "README" else ROOT / "docs" / f"{page}.md"
    return path.read_text(encoding="utf-8")


def all_docs() -> str:
    """README.md and every page of docs/, one after the other."""
    return "\n".join([doc(), *(doc(page.stem) for page in sorted((ROOT / "docs").glob("*.md")))])


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of `language` in a Markdown text."""
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


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


_RATE = re.compile(
    r"; [0-9.]+ MB read in [0-9.]+ s, [0-9.]+ MB/s(; [0-9.]+ MB passed over \(skipped or unchanged\))?$",
    re.MULTILINE,
)


def untimed(out: str) -> str:
    """An ingest's output without its figures that vary from run to run (read MB, time, rate,
    and the MB passed over), which it must have."""
    text, found = _RATE.subn("", out)
    assert found, f"no '; N MB read in T s, R MB/s' in {out!r}"
    return text


# A folder of a test run: simdb-KIND-PID-XXXXXXXX in the temp folder, PID the pytest process's.
_RUN_FOLDER = re.compile(r"simdb-[a-z]+-(?P<pid>[0-9]+)-[a-z0-9_]+")
_made: list[Path] = []  # the current test's folders: conftest calls remove_test_folders when it ends
_REUSED_AFTER = 60.0  # seconds: a pid whose process started this long after its folder was last changed


def run_folder(prefix: str) -> Path:
    """A fresh folder PREFIX + PID-XXXXXXXX that the embedded server's user can enter when we run
    as root; the pid lets a later session tell a killed run's leftovers from a live run's folders."""
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    folder.chmod(0o755 if os.geteuid() == 0 else 0o700)
    return folder


def traversable_tempdir(prefix: str) -> Path:
    """A run_folder that is removed, with any embedded server in it, when the current test ends."""
    folder = run_folder(prefix)
    _made.append(folder)
    return folder


def remove_folder(folder: Path) -> None:
    """Stop each embedded server that has its data in `folder`, then remove the folder."""
    for pgdata in (found for depth in ("", "*/", "*/*/") for found in folder.glob(f"{depth}pgdata")):
        EmbeddedServer(pgdata.parent).stop()
    shutil.rmtree(folder)


def remove_test_folders() -> None:
    """Remove the folders traversable_tempdir made for the test that is ending."""
    while _made:
        folder = _made.pop()
        if folder.exists():
            remove_folder(folder)


def _run_is_gone(pid: int, folder: Path) -> bool:
    """Whether the test run that made `folder` has ended: its pid names no process, or one that
    started well after the folder last changed (the pid reused). A live run's folder is kept."""
    if pid == os.getpid():
        return False
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False
    return started > folder.stat().st_mtime + _REUSED_AFTER


def remove_leftovers(parent: Path | None = None) -> list[Path]:
    """Remove the folders of earlier test runs that were killed before their clean-up (and stop the
    servers left running in them); returns them. Folders of live runs, and any folder not named
    by run_folder, are left alone: other pytest sessions share the temp folder."""
    removed = []
    for folder in sorted((parent or Path(tempfile.gettempdir())).glob("simdb-*")):
        named = _RUN_FOLDER.fullmatch(folder.name)
        if named is None or not folder.is_dir():
            continue
        try:
            if not _run_is_gone(int(named["pid"]), folder):
                continue
            remove_folder(folder)
        except (OSError, DatabaseUnavailable):  # removed meanwhile by another session, or not removable
            continue
        removed.append(folder)
    return removed


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


# --- test databases ------------------------------------------------------------------------------

_DATABASES = itertools.count()  # numbers the databases this run makes


def with_db(dsn: str, name: str) -> str:
    """`dsn` with database `name`."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    return make_conninfo("", **params)


@contextlib.contextmanager
def fresh_database(admin_dsn: str, template_db: str | None = None) -> Iterator[str]:
    """A fresh database, dropped afterwards: its URL. A copy of `template_db` (migrated once),
    or without simdb's schema when none is given."""
    name = f"simdb_t_{os.getpid()}_{next(_DATABASES)}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template_db is not None:
        create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template_db))
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(create)
    try:
        yield with_db(admin_dsn, name)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextlib.contextmanager
def cleared_citus(citus_dsn: str) -> Iterator[Conn]:
    """A connection to the Citus coordinator. The cluster's one database is shared, so every
    index is dropped before and after."""
    with psycopg.connect(citus_dsn, autocommit=True) as connection:
        for name in catalog.index_names(connection):
            index.drop(connection, name)
        yield connection
        for name in catalog.index_names(connection):
            index.drop(connection, name)
