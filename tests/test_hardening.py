"""Findings from a new user's first day (issue 14), one test each: a hang, a wrong exit, state
left broken. Commands that could hang run in a subprocess with a timeout, so a regression fails
instead of stopping the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import Conn

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
        assert done.returncode == 1 and "is not a regular file" in done.stderr and "regular file" in done.stderr
    done = _run("calibrate", str(folder))
    assert "Traceback" not in done.stderr  # finishes (too few documents is a clear error)
