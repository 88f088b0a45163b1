"""Findings from a new user's first day, one test each: a hang, a wrong exit, state
left broken. Commands that could hang run in a subprocess with a timeout, so a regression fails
instead of stopping the suite."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from simdb.errors import during_interrupt
from simdb.kernels.compiled import COMPILING

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
    # keys of ~500 bytes: dedup's 150 rows (75 KB) as well as the pairs outgrow the pipe's 64 KiB,
    # so both are still writing when the reader closes (dedup's summary on stderr comes after)
    long_key = "-with-a-longer-key" * 27
    rows = [json.dumps({"key": f"document-{i:05d}{long_key}", "text": text}) for i in range(150)]
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
        assert running.stderr.read().replace(COMPILING + "\n", "", 1) == ""  # (a first pairs compiles)


def test_a_killed_parallel_ingest_leaves_nothing_running_and_a_rerun_completes(
    dsn: str, tmp_path: Path
) -> None:
    """Item 3: `simdb ingest --jobs 2` sketches in threads of its own process (no worker process
    can outlive a `kill -9`), and running the same command again stores every document."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(3000):
        (folder / f"d{number}.txt").write_text(" ".join(f"w{(number * 7 + i) % 5000}" for i in range(400)))
    assert _run("create", "docs").returncode == 0
    command = [*SIMDB, "ingest", "docs", str(folder), "--jobs", "2", "--batch-size", "20"]
    running = subprocess.Popen(command)
    process = psutil.Process(running.pid)
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while _rows(conn, "docs") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        threads, children = process.num_threads(), process.children(recursive=True)
        assert running.poll() is None, "the ingest ended before it could be killed"
        running.kill()
        running.wait()
        assert children == [] and threads >= 3, (children, threads)  # itself and 2 sketching threads
        assert 0 < _rows(conn, "docs") < 3000
        assert subprocess.run(command, capture_output=True).returncode == 0
        assert _rows(conn, "docs") == 3000


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


def test_the_cli_starts_without_alembic_sqlalchemy_or_the_kernels() -> None:
    """Item 13: Alembic and SQLAlchemy took about half of `simdb --help`'s 1.3 s; they load only to
    migrate. numba and the kernels load only in a command that fingerprints."""
    heavy = "('alembic', 'sqlalchemy', 'numba', 'simdb.kernels.compiled')"
    probe = f"import sys, simdb.cli; print(sorted(m for m in {heavy} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_cli_loads_without_posix_only_modules(dsn: str) -> None:
    """Item 22: with fcntl and pwd missing (as on Windows), `simdb --help` and a command on a
    server given by DSN still work; only the embedded server's start needs them."""
    probe = (
        "import sys; sys.modules['fcntl'] = None; sys.modules['pwd'] = None\nfrom simdb.cli import run; run()"
    )
    for args in (["--help"], ["--dsn", dsn, "list"]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_a_dropped_connection_is_told_apart_from_a_refused_statement() -> None:
    """libpq reports a server that vanished mid-statement (as a Citus coordinator can when a worker
    is stopped) as an error without SQLSTATE; the CLI must say the connection was lost."""
    from simdb.cli import _connection_lost

    assert _connection_lost(psycopg.DatabaseError("SSL SYSCALL error: EOF detected"))
    assert _connection_lost(psycopg.errors.lookup("08006")("connection failure"))
    assert not _connection_lost(psycopg.errors.lookup("23505")("duplicate key value"))
    assert not _connection_lost(psycopg.errors.lookup("42P01")("relation does not exist"))
    assert not _connection_lost(psycopg.ProgrammingError("the query has 2 placeholders but 1 parameters"))


RECORDS = 400  # written to the ingest's stdin, which stays open: it is running when the signal comes


def test_ctrl_c_ends_an_ingest_with_130_and_a_watch_normally(dsn: str) -> None:
    """Item 8: Ctrl-C (SIGINT) during an ingest exits 130 saying a rerun completes the work;
    `sync --watch` prints only rounds that changed something and ends normally on Ctrl-C."""
    assert _run("create", "docs").returncode == 0
    running = subprocess.Popen(  # a session of its own: Ctrl-C on a terminal signals the whole group
        [*SIMDB, "ingest", "docs", "-", "--batch-size", "20", "--jobs", "2"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert running.stdin is not None
    for number in range(RECORDS):
        text = " ".join(f"w{(number * 7 + i) % 5000}" for i in range(400))
        running.stdin.write(json.dumps({"key": f"d{number}", "text": text}) + "\n")
    running.stdin.flush()  # (and left open: the ingest waits for more)
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadline = time.monotonic() + 60
        while _rows(conn, "docs") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(running.pid, signal.SIGINT)  # the whole group, as a terminal's Ctrl-C does
        _, err = running.communicate(timeout=60)
        assert running.returncode == 130, err
        err = err.replace(COMPILING + "\n", "", 1)  # (the first ingest of an install compiles the kernels)
        assert err.strip() == (
            "simdb: interrupted (batches already committed are kept; running the same command again"
            " completes the work)"
        )
        assert 0 < _rows(conn, "docs") <= RECORDS

        conn.execute("CREATE TABLE public.feed (id int PRIMARY KEY, body text NOT NULL)")
        conn.execute("INSERT INTO public.feed VALUES (1, 'first item in the feed')")
        assert (
            _run(
                "attach", "feed", "--table", "feed", "--key-column", "id", "--text-column", "body"
            ).returncode
            == 0
        )
        watching = subprocess.Popen(
            [*SIMDB, "sync", "feed", "--watch", "--interval", "0.1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert watching.stdout is not None
        ready, _, _ = select.select([watching.stdout], [], [], 60)  # its first round (nothing to do)
        assert ready, "sync --watch printed no first round within 60 s"
        first = watching.stdout.readline()
        time.sleep(1)  # and some more rounds with nothing to do
        conn.execute("INSERT INTO public.feed VALUES (2, 'another item, arriving later')")
        deadline = time.monotonic() + 30
        while _rows(conn, "feed") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        os.killpg(watching.pid, signal.SIGINT)
        out, err = watching.communicate(timeout=30)
    assert watching.returncode == 0 and err == "", err
    assert [
        first.rstrip("\n"),
        *out.splitlines(),
    ] == [  # (from the queue its triggers fill: attach filled the index)
        "synced: 0 new, 0 updated, 0 removed, 0 without text (not indexed); from the queue: 0 changed keys, 0 with their text as it was",
        "synced: 1 new, 0 updated, 0 removed, 0 without text (not indexed); from the queue: 1 changed keys, 0 with their text as it was",
    ]


def _rows(conn: psycopg.Connection[tuple[object, ...]], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM simdb.{}").format(sql.Identifier(table))).fetchone()
    return int(row[0]) if row else 0


def test_an_error_raised_while_handling_ctrl_c_counts_as_the_interrupt() -> None:
    """psycopg's COPY, ended by a Ctrl-C mid-statement, can raise its own error in place of the
    interrupt; the CLI then still says "interrupted" and exits 130 (seen once in CI)."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise psycopg.OperationalError("sending query failed: another command is already in progress")  # noqa: B904
    except psycopg.OperationalError as error:
        assert during_interrupt(error)
    assert not during_interrupt(psycopg.OperationalError("server closed the connection unexpectedly"))
