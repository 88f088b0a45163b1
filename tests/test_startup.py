"""Issue 31, start-up: the kernels' first compile says what it is doing, and only then.

Each run is a fresh process with numba's cache in a directory of the test's own (NUMBA_CACHE_DIR),
so the first one finds it empty and compiles; the second finds the machine code and is quiet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from simdb import onetext
from simdb.kernels import COMPILING

_CLI = "from simdb.cli import run; run()"
_LONG = "hello world " * (onetext.LIMIT // 10)  # past one short text: fingerprinted by the kernels


def _run(cache: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """A fresh Python process with numba's cache in `cache`."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, env=environment, check=True
    )


def _fingerprint(cache: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return _run(cache, "-c", _CLI, "fingerprint", "--text", _LONG, *options)


def test_the_first_compile_is_announced_once_and_a_warm_cache_is_quiet(tmp_path: Path, empty_db: str) -> None:
    cold = _fingerprint(tmp_path)
    assert cold.stderr.splitlines() == [COMPILING]
    assert any(tmp_path.rglob("*.nbi")), "numba wrote no cache index where NUMBA_CACHE_DIR points"
    warm = _fingerprint(tmp_path)
    assert warm.stderr == ""
    assert warm.stdout == cold.stdout and warm.stdout.strip()

    # `simdb init` creates the schema, then compiles the rest of the kernels (and says so);
    # afterwards nothing compiles, whatever the features, width, spec or mode
    init = _run(tmp_path, "-c", _CLI, "init", "--dsn", empty_db)
    assert init.stderr.splitlines() == [COMPILING]
    assert "schema is at revision" in init.stdout and "kernels are compiled" in init.stdout
    assert _run(tmp_path, "-m", "simdb.warmup").stderr == ""  # the same kernels, loaded from the cache
    for features in ("word:3", "char:5", "bytes:4"):
        for extra in (
            [],
            ["--bits", "128"],
            ["--fingerprint-spec", "1"],
            ["--fingerprint-spec", "3", "--bits", "128"],
            ["--mode", "jaccard"],
        ):
            later = _fingerprint(tmp_path, "--features", features, *extra)
            assert later.stderr == "", (features, extra, later.stderr)
