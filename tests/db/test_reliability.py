"""Nothing lost: a killed ingest re-run gives the clean result; concurrent ingests keep one row per key;
readers turn any bytes into documents, counted skips or one InputError, never a traceback."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql
from support import Conn, simdb, traversable_tempdir, untimed

from simdb import duplicates, ingest, query
from simdb.db.embedded import EmbeddedServer
from simdb.errors import InputError
from simdb.index import lifecycle as index
from simdb.index import names
from simdb.index.modes import SimhashSpec
from simdb.sketch.features import EmptyDocument
from simdb.sketch.minhash import document_signature
from simdb.sketch.simhash import fingerprint
from simdb.sources import readers


def _write_docs(path: Path, keys: range, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in keys:
            words = " ".join(f"w{rng.randrange(5000)}" for _ in range(60))
            out.write(json.dumps({"key": f"k{i}", "text": f"doc {i} {words}"}) + "\n")


def _ingest_process(dsn: str, name: str, source: Path) -> subprocess.Popen[bytes]:
    code = "import sys; from simdb.cli import run; run(sys.argv[1:])"
    return subprocess.Popen(
        [sys.executable, "-c", code, "ingest", name, str(source), "--batch-size", "300", "--jobs", "1"],
        env={**os.environ, "SIMDB_DSN": dsn},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _checksum(conn: Conn, name: str) -> tuple[object, ...]:
    row = conn.execute(
        f"SELECT count(*), md5(string_agg(key || ':' || fingerprint, ',' ORDER BY key)) FROM simdb.{name}"
    )
    result = row.fetchone()
    assert result is not None
    return result


def test_kill_9_then_rerun_equals_a_clean_run(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: Conn, tmp_path: Path
) -> None:
    source = tmp_path / "docs.jsonl"
    _write_docs(source, range(6000))
    simdb(capsys, "create", "clean")
    simdb(capsys, "create", "killed")
    assert simdb(capsys, "ingest", "clean", str(source), "--jobs", "1")[0] == 0
    counts = []
    for batches_before_kill in (1, 7, 13):  # kill -9 once 300, 2100 and 3900 rows are committed
        process = _ingest_process(dsn, "killed", source)
        while _checksum(conn, "killed")[0] < 300 * batches_before_kill and process.poll() is None:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        counts.append(_checksum(conn, "killed")[0])
    assert all(0 < count < 6000 for count in counts), counts  # every kill landed mid-ingest
    finished = _ingest_process(dsn, "killed", source)
    _, err = finished.communicate(timeout=300)
    assert finished.returncode == 0, err
    assert _checksum(conn, "killed") == _checksum(conn, "clean")
    assert _checksum(conn, "clean")[0] == 6000


def test_concurrent_ingests_with_overlapping_keys(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: Conn, tmp_path: Path
) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _write_docs(first, range(0, 4000))
    _write_docs(second, range(2000, 6000), seed=1)  # keys 2000..3999 in both, with other texts
    simdb(capsys, "create", "shared")
    processes = [_ingest_process(dsn, "shared", source) for source in (first, second)]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    keys = [key for (key,) in conn.execute("SELECT key FROM simdb.shared ORDER BY key")]
    assert keys == sorted(f"k{i}" for i in range(6000))
    made = index.get(conn, "shared")  # both were first loads: their B-trees were built once
    assert _btrees(conn, "shared") == sorted(
        [names.primary_key_name("shared")] + [names.btree_name("shared", column) for column in made.columns]
    )


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=3000) | st.text(max_size=500).map(lambda t: t.encode("utf-8", "surrogatepass")),
    kind=st.sampled_from(["text", "jsonl", "csv"]),
    skip_errors=st.booleans(),
)
def test_readers_never_crash(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, kind: str, skip_errors: bool
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / f"input.{kind}"
    path.write_bytes(data)
    try:
        items = list(readers.read([str(path)], readers.Options(kind, skip_errors=skip_errors)))
    except InputError as error:
        assert not skip_errors and str(path) in str(error) and "\n" not in str(error)
        return
    documents = [item for item in items if isinstance(item, readers.Document)]
    for document in documents:  # any text has a fingerprint and a signature, or is empty
        try:
            assert 0 <= fingerprint(document.text) < 2**64
            assert len(document_signature(document.text)) == 128 + 64  # signature and check
        except EmptyDocument:
            assert not any(character.isalnum() for character in document.text)
    assert all(isinstance(item, readers.Document | readers.Skip) for item in items)


def test_database_restart_mid_ingest(tmp_path: Path) -> None:
    """On a private server we may restart: a clear error, no half batch, and a re-run completes."""
    server = EmbeddedServer(traversable_tempdir("simdb-restart-") / "home")
    dsn = server.start()
    try:
        source = tmp_path / "docs.jsonl"
        _write_docs(source, range(8000))
        assert (
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; from simdb.cli import run; run(sys.argv[1:])",
                    "create",
                    "docs",
                ],
                env={**os.environ, "SIMDB_DSN": dsn},
                capture_output=True,
                check=False,
            ).returncode
            == 0
        )
        process = _ingest_process(dsn, "docs", source)
        with psycopg.connect(dsn, autocommit=True) as conn:
            while _checksum(conn, "docs")[0] < 900 and process.poll() is None:
                time.sleep(0.01)
        server.stop()
        _, err = process.communicate(timeout=120)
        server.start()
        assert process.returncode == 1
        lines = err.decode().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("simdb: error: ")
        with psycopg.connect(dsn, autocommit=True) as conn:
            partial = _checksum(conn, "docs")[0]
            assert (
                isinstance(partial, int) and 0 < partial < 8000 and partial % 300 == 0
            )  # whole batches only
        rerun = _ingest_process(dsn, "docs", source)
        _, err = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, err
        with psycopg.connect(dsn, autocommit=True) as conn:
            assert _checksum(conn, "docs")[0] == 8000
    finally:
        server.stop()


def test_nested_folders_symlink_loops_and_dangling_links(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    root = tmp_path / "tree"
    deep = root
    for level in range(60):
        deep = deep / f"level{level}"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("the document at the bottom of a deep tree")
    (root / "level0" / "loop").symlink_to(root)  # a folder symlink back up: not followed
    (root / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    (root / "mixed.txt").write_bytes("caf\xe9 ".encode("latin-1") + "naïve ".encode() + b"\xff\xfe words")
    simdb(capsys, "create", "docs")
    code, out, err = simdb(capsys, "ingest", "docs", str(root))
    assert code == 1 and err.count("\n") == 1 and "dangling.txt" in err
    code, out, err = simdb(capsys, "ingest", "docs", str(root), "--skip-errors")
    assert (code, err) == (0, "")
    assert untimed(out) == (
        "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 1 (1 unreadable); "
        "1 had invalid UTF-8 replaced by U+FFFD\n"
    )


def _btrees(conn: Conn, table: str = "docs") -> list[str]:
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'simdb' AND tablename = %s", (table,)
    )
    return sorted(str(row[0]) for row in rows)


def test_a_first_load_is_copied_and_its_btrees_built_once_at_the_end(conn: Conn) -> None:
    """An ingest into an empty index copies its batches straight into the table and
    builds the B-trees at its end; a key repeated in a later batch still replaces its row; a
    B-tree missing after an interrupted first load is built by the next ingest."""
    made = index.create(conn, "docs", SimhashSpec())
    complete = _btrees(conn)
    texts = [f"document {number} with words {number * 7} and {number % 13}" for number in range(200)]
    documents = [readers.Document(f"k{number % 150}", text, 10) for number, text in enumerate(texts)]
    report = ingest.ingest(conn, made, documents, batch_size=60)
    assert (report.inserted, report.updated, report.unchanged) == (150, 50, 0)
    assert _btrees(conn) == complete and "btrees" in report.seconds
    stored = {
        str(key): made.from_sql(value)
        for key, value in conn.execute("SELECT key, fingerprint FROM simdb.docs")
    }
    assert stored == {
        f"k{number % 150}": made.sketch(text) for number, text in enumerate(texts)
    }  # the last text
    found = query.near(conn, made, made.sketch(texts[199]), max_distance=0)
    assert [match.key for match in found] == ["k49"]

    conn.execute(sql.SQL("DROP INDEX {}").format(names.btree("docs", made.columns[0])))  # as if interrupted
    report = ingest.ingest(conn, made, [readers.Document("new", "one more document of words", 10)])
    assert report.inserted == 1 and _btrees(conn) == complete and "btrees" in report.seconds
    report = ingest.ingest(conn, made, [readers.Document("newer", "and another document of words", 10)])
    assert report.inserted == 1 and "btrees" not in report.seconds  # nothing missing: updated in place


_WATCHER = "simdb-test-watcher"  # the application_name of the watcher's connections


def _watcher_backends(conn: Conn) -> set[int]:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
        (_WATCHER,),
    ).fetchall()
    return {int(pid) for (pid,) in rows}  # type: ignore[call-overload]


def _indexed(conn: Conn, way: str) -> dict[str, int]:
    """What index "feed" holds: key -> fingerprint (unsigned)."""
    statement = (
        "SELECT id::text, fp FROM public.feed WHERE fp IS NOT NULL"
        if way == "column"
        else "SELECT key, fingerprint FROM simdb.feed"
    )
    return {str(key): int(value) & (2**64 - 1) for key, value in conn.execute(statement)}  # type: ignore[call-overload]


def _recomputed(conn: Conn) -> dict[str, int]:
    """A full recompute of every row's fingerprint from its text, as the index should hold it."""
    rows = conn.execute("SELECT id::text, body FROM public.feed WHERE body IS NOT NULL").fetchall()
    made = index.get(conn, "feed")  # its fingerprint spec
    return {str(key): int(made.sketch(str(body))) for key, body in rows}


@pytest.mark.parametrize("way", ["side", "column"])
def test_sync_watch_reconnects_after_its_backends_are_terminated_and_loses_no_change(
    dsn: str, conn: Conn, way: str
) -> None:
    """The application writes throughout; the watcher's backends are terminated twice (as a server
    restart or a failover would end them): it says so in one line each time, reconnects, and the
    index ends equal to a full recompute of the table."""
    rng = random.Random(3)

    def text() -> str:
        return " ".join(f"w{rng.randrange(3000)}" for _ in range(80))

    conn.execute("CREATE TABLE public.feed (id bigint PRIMARY KEY, body text, fp bigint)")
    conn.cursor().executemany(
        "INSERT INTO public.feed (id, body) VALUES (%s, %s)", [(i, text()) for i in range(200)]
    )
    column = ["--fingerprint-column", "fp"] if way == "column" else []
    attached = subprocess.run(
        [sys.executable, "-c", "from simdb.cli import run; run()", "attach", "feed", "--table", "public.feed",
         "--key-column", "id", "--text-column", "body", *column],
        env={**os.environ, "SIMDB_DSN": dsn}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert attached.returncode == 0, attached.stderr
    watching = subprocess.Popen(
        [sys.executable, "-c", "from simdb.cli import run; run()", "sync", "feed", "--watch", "--interval", "1"],
        env={**os.environ, "SIMDB_DSN": dsn, "PGAPPNAME": _WATCHER},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    writing = True
    written = 0

    def application() -> None:
        nonlocal written
        with psycopg.connect(dsn, autocommit=True) as app:
            next_id = 1000
            while writing:
                key = rng.randrange(200)
                app.execute("UPDATE public.feed SET body = %s WHERE id = %s", (text(), key))
                app.execute("INSERT INTO public.feed (id, body) VALUES (%s, %s)", (next_id, text()))
                app.execute("DELETE FROM public.feed WHERE id = %s", (rng.randrange(200, 1000) + next_id,))
                next_id += 1
                written += 1
                time.sleep(0.005)

    writer = threading.Thread(target=application, daemon=True)
    try:
        deadline = time.monotonic() + 120
        while len(_watcher_backends(conn)) < 2 and time.monotonic() < deadline:  # listening
            time.sleep(0.05)
        writer.start()
        for _ in range(2):
            time.sleep(1.0)
            victims = _watcher_backends(conn)
            assert len(victims) == 2, victims  # its sync connection and its listener
            for pid in victims:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
            deadline = time.monotonic() + 60
            while not (len(_watcher_backends(conn)) == 2 and not victims & _watcher_backends(conn)):
                assert time.monotonic() < deadline and watching.poll() is None, "the watcher ended"
                time.sleep(0.05)
        time.sleep(1.0)
        writing = False
        writer.join(30)
        assert written > 100
        deadline = time.monotonic() + 120
        while _indexed(conn, way) != _recomputed(conn) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _indexed(conn, way) == _recomputed(conn)
    finally:
        writing = False
        if watching.poll() is None:
            os.killpg(watching.pid, signal.SIGINT)
        out, err = watching.communicate(timeout=60)
    assert watching.returncode == 0, err
    reasons = {  # (the server's FATAL, or libpq's words when the socket closed before it was read)
        "terminating connection due to administrator command",
        "consuming input failed: server closed the connection unexpectedly",
    }
    lost = [
        f"simdb: sync --watch feed: lost the connection to the database ({reason}); reconnecting,"
        " 0.5 s to 30 s apart, and syncing what changed meanwhile"
        for reason in reasons
    ]
    lines = err.splitlines()
    assert len(lines) == 2 and all(line in lost for line in lines), err
    assert out.startswith("synced: ")


def test_pairs_new_misses_no_write_that_commits_during_a_run(dsn: str, conn: Conn) -> None:
    """A write in a transaction that began before a `pairs --new` run took its snapshot, and
    committed while the run read its pairs, is not in that run (its snapshot does not see it) and
    is in the next one: the mark is the run's snapshot, not a time (a timestamp taken when the
    write began would be older than the mark, and the row lost)."""
    made = index.create(conn, "docs", SimhashSpec(max_distance=2))
    ingest.store(conn, made, {"a": 0b1111, "b": 0b1110_0000_0000})
    assert [
        (p.key_a, p.key_b) for p in duplicates.pairs(conn, made, new_for="default")
    ] == []  # tracks from here
    ingest.store(conn, made, {"c": 0b1110})  # a new row near a
    with psycopg.connect(dsn, autocommit=True) as other:
        with other.transaction():
            other.execute("INSERT INTO simdb.docs (key, fingerprint) VALUES ('d', %s)", (0b1110_0000_0001,))
            run = duplicates.pairs(conn, made, new_for="default")
            first = next(run)  # the run's snapshot is taken: d's transaction is still open
        rest = list(run)  # d has committed while the run reads
    assert [(p.key_a, p.key_b) for p in [first, *rest]] == [("a", "c")]
    assert [(p.key_a, p.key_b) for p in duplicates.pairs(conn, made, new_for="default")] == [("b", "d")]
    assert list(duplicates.pairs(conn, made, new_for="default")) == []
