"""Findings from a new user's first day (issue 14), one test each: a hang, a wrong exit, state
left broken. Commands that could hang run in a subprocess with a timeout, so a regression fails
instead of stopping the suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg

SIMDB = [sys.executable, "-c", "from simdb.cli import run; run()"]


def _run(*args: str, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SIMDB, *args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload,no-any-return]


def test_a_named_pipe_is_skipped_or_refused_never_waited_on(dsn: str, tmp_path: Path) -> None:
    """Item 1: a FIFO in a folder, named directly, with --skip-errors, or given to --file."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("one two three four five six seven eight nine ten")
    os.mkfifo(folder / "pipe")
    for extra in ([], ["--skip-errors"]):
        done = _run("ingest", "docs", str(folder), "--create", *extra)
        assert done.returncode == 0, done.stderr
        assert "ingested 1 documents" in done.stdout and "skipped 1 (1 not a regular file)" in done.stdout
    done = _run("ingest", "docs", str(folder / "pipe"))
    assert done.returncode == 0 and "skipped 1 (1 not a regular file)" in done.stdout
    for command in (["query", "docs", "--file"], ["fingerprint", "--file"]):
        done = _run(*command, str(folder / "pipe"))
        assert (
            done.returncode == 1 and "is not a regular file" in done.stderr and "regular file" in done.stderr
        )
    done = _run("calibrate", str(folder))
    assert "Traceback" not in done.stderr  # finishes (too few documents is a clear error)


def test_a_reader_that_closes_the_pipe_is_a_normal_end(dsn: str, tmp_path: Path) -> None:
    """Item 2: `simdb pairs NAME | head -1` and `dedup ... | head -1` exit 0 and print nothing more."""
    text = "the same words in every document " * 5
    rows = [json.dumps({"key": f"document-{i:05d}-with-a-longer-key", "text": text}) for i in range(150)]
    (tmp_path / "same.jsonl").write_text("\n".join(rows))
    assert _run("ingest", "docs", str(tmp_path / "same.jsonl"), "--create").returncode == 0
    for command in (["pairs", "docs"], ["dedup", "docs", "--keep", "first"]):
        running = subprocess.Popen(
            [*SIMDB, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert running.stdout is not None and running.stderr is not None
        assert running.stdout.readline()  # the header; 11,175 pairs (over 64 KiB) are still to come
        running.stdout.close()
        assert running.wait(timeout=60) == 0
        assert running.stderr.read() == ""


def test_workers_die_with_a_killed_ingest(dsn: str, tmp_path: Path) -> None:
    """Item 3: after `kill -9` of `simdb ingest --jobs 2`, no worker and no resource tracker
    is left running."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(3000):
        (folder / f"d{number}.txt").write_text(" ".join(f"w{(number * 7 + i) % 5000}" for i in range(400)))
    assert _run("create", "docs").returncode == 0
    running = subprocess.Popen([*SIMDB, "ingest", "docs", str(folder), "--jobs", "2", "--batch-size", "20"])
    parent = psutil.Process(running.pid)
    deadline = time.monotonic() + 60
    while len(parent.children()) < 3 and time.monotonic() < deadline:  # 2 workers and the tracker
        time.sleep(0.05)
    children = parent.children(recursive=True)
    assert len(children) >= 2 and running.poll() is None, "the ingest ended before its workers started"
    running.kill()
    running.wait()
    _, alive = psutil.wait_procs(children, timeout=20)
    assert alive == [], f"left running after kill -9 of their parent: {alive}"


def test_reading_commands_never_create_the_schema(empty_db: str, tmp_path: Path) -> None:
    """Item 10: `simdb list` (or query, pairs, drop...) on a database without simdb's schema says
    so and leaves the database as it was; a command that writes creates the schema."""
    for command in (
        ["list"],
        ["pairs", "docs"],
        ["query", "docs", "--text", "a b c"],
        ["drop", "docs", "--yes"],
    ):
        done = _run("--dsn", empty_db, *command)
        assert done.returncode == 1 and "no simdb schema in database" in done.stderr, done.stderr
        assert "simdb init" in done.stderr
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'simdb'").fetchone() == (0,)
    assert _run("--dsn", empty_db, "create", "docs").returncode == 0
    assert _run("--dsn", empty_db, "list").returncode == 0


def test_the_cli_starts_without_alembic_or_sqlalchemy() -> None:
    """Item 13: those two took about half of `simdb --help`'s 1.3 s; they load only to migrate."""
    probe = "import sys, simdb.cli; print(sorted(m for m in ('alembic', 'sqlalchemy') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
