"""Progress follows the work done, and shows on a terminal only."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import psycopg
import pytest
from support import Conn

from simdb import duplicates, ingest
from simdb.follow import keep
from simdb.index import lifecycle as index
from simdb.index.modes.simhash import SimhashSpec
from simdb.measure import calibrate
from simdb.sketch.features import Features
from simdb.sources import readers

SIMDB = [sys.executable, "-c", "from simdb.cli import run; run()"]


def _stored_bytes(dsn: str) -> int:
    with psycopg.connect(dsn) as other:  # a second session: it sees committed batches only
        row = other.execute("SELECT coalesce(sum(size), 0) FROM simdb.docs").fetchone()
        return int(row[0]) if row else 0


def _documents(folder: Path, count: int) -> None:
    folder.mkdir()
    for number in range(count):
        (folder / f"d{number:03d}.txt").write_text(" ".join(f"w{number}x{i}" for i in range(60 + number)))


@pytest.mark.parametrize("jobs", [1, 2])
def test_ingest_reports_bytes_part_by_part_as_sketched(
    dsn: str, conn: Conn, tmp_path: Path, jobs: int
) -> None:
    """Progress moves within a batch, as its parts are fingerprinted (a batch of
    large files used to show 0% until it was stored), and never runs more than the batch being
    stored ahead of what is committed."""
    _documents(tmp_path / "docs", 50)
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    reported: list[tuple[int, int]] = []
    total = 0

    def progress(done: int) -> None:
        nonlocal total
        total += done
        reported.append((total, _stored_bytes(dsn)))

    items = readers.read([str(tmp_path / "docs")], readers.Options())
    report = ingest.ingest(conn, made, items, batch_size=10, progress=progress, jobs=jobs)
    assert report.inserted == 50
    assert len(reported) >= 5 * 4  # 5 batches of 10, each reported in 4 parts at least
    assert reported[0][1] == 0 and reported[3][1] == 0  # the first batch's parts, before its commit
    largest_batch = max(
        sum(os.path.getsize(tmp_path / "docs" / f"d{n:03d}.txt") for n in range(at, at + 10))
        for at in range(0, 50, 10)
    )
    assert all(0 <= done - stored <= largest_batch for done, stored in reported), reported
    assert total == readers.total_size([str(tmp_path / "docs")]) == report.bytes


def test_sync_clusters_and_calibrate_report_their_work(conn: Conn, tmp_path: Path) -> None:
    conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text)")
    conn.execute(
        "INSERT INTO public.notes SELECT n, 'the same old note, again and again ' || (n % 3)"
        " FROM generate_series(1, 30) AS n"
    )
    keep.attach(conn, "notes", "public.notes", "id", "body")
    synced: list[int] = []
    assert keep.sync(conn, "notes", synced.append).added == 30 and sum(synced) == 30
    joined: list[int] = []
    found = duplicates.clusters(conn, index.get(conn, "notes"), progress=joined.append)
    assert found.pairs > 0 and sum(joined) == found.pairs
    steps: list[str] = []
    documents = [readers.Document(f"d{i}", f"alpha beta gamma delta {i % 5} epsilon", 30) for i in range(40)]
    calibrate.calibrate(documents, Features.parse("word:3"), 25, progress=steps.append)
    assert steps[0] == "reading the documents and drawing the sample"
    assert steps[1] == "fingerprinting 25 sampled documents of 40 read (SimHash, MinHash, shingle sets)"
    assert len(steps) == 5


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run simdb with stderr on a pseudo-terminal and stdout in a pipe: (exit code, out, terminal)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
    running = subprocess.Popen(
        [*SIMDB, *args], stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, env=env
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
        elif running.poll() is not None:
            break
    os.close(leader)
    assert running.stdout is not None
    out = running.stdout.read().decode()
    return running.wait(timeout=60), out, seen.decode(errors="replace")


def test_bars_show_on_a_terminal_and_not_in_a_pipe(dsn: str, tmp_path: Path) -> None:
    _documents(tmp_path / "docs", 40)
    env = {**os.environ, "SIMDB_DSN": dsn}
    code, out, terminal = _on_a_terminal(["ingest", "docs", str(tmp_path / "docs"), "--create"], env)
    assert code == 0 and out.startswith("ingested 40 documents")
    assert "ingest docs:   0%" in terminal  # (the run is shorter than the bar's refresh interval)
    code, out, terminal = _on_a_terminal(["pairs", "docs", "-k", "3"], env)
    assert code == 0 and out.startswith("key_a,key_b,distance") and "pairs docs:" in terminal
    piped = subprocess.run([*SIMDB, "pairs", "docs"], capture_output=True, text=True, env=env, timeout=60)
    assert piped.returncode == 0 and piped.stderr == ""
