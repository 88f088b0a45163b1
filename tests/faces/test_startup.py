"""Start-up: the kernels' first compile says what it is doing, and only then; what a command loads.

Each run is a fresh process with numba's cache in a directory of the test's own (NUMBA_CACHE_DIR),
so the first one finds it empty and compiles; the second finds the machine code and is quiet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from simdb.kernels.compiled import COMPILING
from simdb.sketch import short_text

_CLI = "from simdb.cli import run; run()"
_LONG = "hello world " * (short_text.LIMIT // 10)  # past one short text: fingerprinted by the kernels


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

    # the first compile compiled every kernel, as it said ("once per install"): `simdb init`, and
    # any later command, compiles none (the quick start's ingest, then pairs, said it twice)
    init = _run(tmp_path, "-c", _CLI, "init", "--dsn", empty_db)
    assert init.stderr == ""
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


# Imports the command runs, printed on stderr as it exits (a --help ends with SystemExit).
_IMPORTS = """
import atexit, sys
atexit.register(lambda: print(" ".join(sorted(sys.modules)), file=sys.stderr))
from simdb.cli import run
run(sys.argv[1:])
"""


def _imported(*arguments: str) -> set[str]:
    """The modules loaded by `simdb ARGUMENTS` in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _IMPORTS, *arguments], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.splitlines()[-1].split())


def test_help_loads_neither_numpy_nor_psycopg_nor_the_commands() -> None:
    """`simdb --help` lists every command without loading the commands' modules or the libraries
    they call (numpy and psycopg were most of its half second)."""
    loaded = _imported("--help")
    assert {"numpy", "psycopg", "xxhash", "numba", "logging"} & loaded == set()
    assert {module for module in loaded if module.startswith("simdb")} == {
        "simdb",
        "simdb.cli",
        "simdb.cli.examples",
        "simdb.cli.settings",
        "simdb.errors",
        "simdb.kernels",  # (the light face: hooks and two constants, no numba)
        "simdb.moved",
        "simdb.sketch",
        "simdb.sketch.bits",
    }


def test_query_by_text_loads_only_what_a_query_needs(dsn: str) -> None:
    """`simdb query NAME --text` loads numpy (one short text's counters) and psycopg, and not the
    kernels, the file readers, ingest's code or the embedded server's code (a DSN is given)."""
    subprocess.run(
        [sys.executable, "-c", _CLI, "create", "docs", "--dsn", dsn], check=True, capture_output=True
    )
    loaded = _imported("query", "docs", "--text", "the quick brown fox", "--dsn", dsn)
    assert {"numpy", "psycopg"} <= loaded
    unneeded = {
        "numba",
        "simdb.kernels.compiled",
        "simdb.sources.readers",
        "simdb.db.embedded",
        "simdb.ingest",
        "simdb.follow.side",
    }
    assert unneeded & loaded == set()
