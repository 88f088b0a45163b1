"""The CLI end to end on a real database: exit codes and messages are exact."""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

import pytest
from support import Conn, simdb, untimed

from simdb.errors import InputError
from simdb.sketch.bits import to_hex
from simdb.sketch.simhash import NEW_INDEX_SPEC, fingerprint
from simdb.sources import readers

BASE = " ".join(f"alpha{i % 31} beta{i % 7} gamma{i}" for i in range(300))


def rows(conn: Conn, name: str = "docs") -> list[tuple[object, ...]]:
    return conn.execute(f"SELECT key, fingerprint FROM simdb.{name} ORDER BY key").fetchall()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(BASE)
    (folder / "sub" / "a_copy.txt").write_text(BASE.replace("gamma150", "edited150", 1))
    (folder / "b.txt").write_text("an unrelated text about other things " * 30)
    (folder / "empty.txt").write_text("  ... \n")
    (folder / ".hidden").write_text(BASE)
    return folder


def test_fingerprint_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # the default index's fingerprint, one-bit MinHash (spec v3); SimHash with --fingerprint-spec 2
    assert simdb(capsys, "fingerprint", "--text", "hello world") == (0, "6cf5d058dba6b100\n", "")
    assert simdb(capsys, "fingerprint", "--text", "hello world", "--fingerprint-spec", "2") == (
        0,
        "ba9b091b33c2300c\n",
        "",
    )
    file = tmp_path / "f.txt"
    file.write_text("The quick brown fox jumps over the lazy dog", encoding="utf-8")
    assert simdb(capsys, "fingerprint", "--file", str(file)) == (0, "bb1ce4e62564cb30\n", "")
    assert (
        simdb(capsys, "fingerprint", "--file", str(file), "--fingerprint-spec", "2")[1]
        == "a70392059ddfcbce\n"
    )
    code, _, err = simdb(capsys, "fingerprint", "--text", "...")
    assert (code, err) == (
        1,
        "simdb: error: --text has no word characters, so it has no fingerprint (give a document with some text)\n",
    )
    code, _, err = simdb(capsys, "fingerprint", "--text", "a", "--file", str(file))
    assert code == 2 and "give exactly one of --text, --file" in err


def test_help_is_clear(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simdb(capsys, "--help")
    assert code == 0 and "Near-duplicate search that lives in PostgreSQL" in out
    for command in ("create", "ingest", "query", "fingerprint", "db", "list", "drop"):
        assert command in out
    code, out, _ = simdb(capsys, "ingest", "--help")
    assert code == 0 and "--skip-errors" in out and "--key-field" in out


def test_folder_ingest_and_query(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: Conn, corpus: Path
) -> None:
    code, out, _ = simdb(capsys, "create", "docs")
    assert code == 0 and out.startswith(
        "created simhash index docs: 64-bit one-bit MinHash, max distance 5, 7 blocks, 21 tables"
    )
    code, out, _ = simdb(capsys, "ingest", "docs", str(corpus))
    assert (code, untimed(out)) == (
        0,
        "ingested 3 documents: 3 new, 0 updated, 0 unchanged; skipped 1 (1 empty)\n",
    )
    code, out, _ = simdb(capsys, "ingest", "docs", str(corpus))
    assert (code, untimed(out)) == (
        0,
        "ingested 3 documents: 0 new, 0 updated, 3 unchanged; skipped 1 (1 empty)\n",
    )

    code, out, _ = simdb(capsys, "query", "docs", "--file", str(corpus / "a.txt"), "--json")
    result = json.loads(out)
    keys = [match["key"] for match in result]
    assert code == 0 and keys[0] == str(corpus / "a.txt") and str(corpus / "sub" / "a_copy.txt") in keys
    assert str(corpus / "b.txt") not in keys
    assert result[0] == {"key": str(corpus / "a.txt"), "distance": 0}

    code, out, _ = simdb(capsys, "query", "docs", "--key", str(corpus / "b.txt"), "-k", "0")
    assert code == 0
    assert out.splitlines() == ["distance  key", f"       0  {corpus / 'b.txt'}"]

    value = fingerprint(BASE, spec=NEW_INDEX_SPEC)
    code, out, _ = simdb(capsys, "query", "docs", "--fingerprint", to_hex(value), "--json")
    assert [m["key"] for m in json.loads(out)] == keys

    code, out, _ = simdb(capsys, "list", "--json")
    assert json.loads(out) == [
        {
            "name": "docs",
            "mode": "simhash",
            "rows": 3,
            "features": "word:3",
            "spec_version": 3,
            "finds": "finds 9 in 10 copies at Jaccard >= 0.90 (a changed line in documents over 1.4 KB)",
            "placement": "local",
            "storage": "own",
            "bits": 64,
            "max_distance": 5,
            "blocks": 7,
            "tables": 21,
            "prefix_bits": [19] * 6 + [18] * 15,
        }
    ]


def test_query_errors(capsys: pytest.CaptureFixture[str], dsn: str) -> None:
    simdb(capsys, "create", "docs", "-k", "2")
    cases = {
        ("query", "docs", "--fingerprint", "xyz"): "simdb: error: bad fingerprint 'xyz' "
        "(give 1 to 16 hex digits, e.g. 3f2a9c0d11e4b7a8)\n",
        ("query", "docs", "--text", "hello", "-k", "3"): "simdb: error: max distance 3 is outside 0..2 for "
        "index 'docs' (an index answers exactly up to the distance it was created with; create one with "
        "--max-distance 3 for more)\n",
        ("query", "nope", "--text", "hello"): "simdb: error: no index named 'nope' (check the name "
        "and the database: `simdb list` shows the indexes there)\n",
        ("query", "docs", "--key", "missing"): "simdb: error: index 'docs' has no key 'missing' "
        "(check the key, e.g. with SQL)\n",
        ("create", "docs"): "simdb: error: index 'docs' already exists (pick another name, or drop it "
        "first with `simdb drop docs`)\n",
        ("create", "Bad Name"): "simdb: error: bad index name 'Bad Name' (use 1 to 40 characters: a "
        "lower-case letter, then letters, digits or single '_')\n",
        ("create", "other", "-k", "12"): "simdb: error: max distance 12 is out of range for 64-bit "
        "fingerprints (exact search supports 0 to 8 bits (beyond that the tables it needs multiply past 64 "
        "or every probe reads a large share of the rows); 3 is usual for 64-bit SimHash; 128-bit "
        "fingerprints (--bits 128) serve up to 16)\n",
        ("create", "other", "--features", "line:3"): "simdb: error: unknown feature kind 'line' "
        "(use 'word:N', 'char:N' or 'bytes:N', e.g. word:3)\n",
    }
    for args, message in cases.items():
        assert simdb(capsys, *args) == (1, "", message), args
    code, _, err = simdb(capsys, "query", "docs")
    assert code == 2 and "give exactly one of --text, --file, --fingerprint, --key" in err


def test_jsonl_csv_and_stdin(capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path) -> None:
    simdb(capsys, "create", "docs")
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(
        json.dumps({"id": 1, "body": BASE})
        + "\n\n"
        + json.dumps({"id": "two", "body": BASE + " more"})
        + "\n"
    )
    code, out, _ = simdb(capsys, "ingest", "docs", str(jsonl), "--key-field", "id", "--text-field", "body")
    assert (code, untimed(out)) == (0, "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 0\n")
    table = tmp_path / "docs.csv"
    table.write_text('key,text\nc1,"a, quoted\nmultiline text"\nc2,plain words here\n')
    code, out, _ = simdb(capsys, "ingest", "docs", str(table))
    assert (code, untimed(out)) == (0, "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 0\n")
    stdin = (json.dumps({"key": "s1", "text": "from standard input"}) + "\n").encode()
    code, out, _ = simdb(capsys, "ingest", "docs", "-", stdin=stdin)
    assert (code, untimed(out)) == (0, "ingested 1 documents: 1 new, 0 updated, 0 unchanged; skipped 0\n")
    assert [key for key, _ in rows(conn)] == ["1", "c1", "c2", "s1", "two"]


def test_malformed_jsonl_stops_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    simdb(capsys, "create", "docs")
    simdb(capsys, "ingest", "docs", "-", stdin=b'{"key": "old", "text": "already stored text"}\n')
    before = rows(conn)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"key": "a", "text": "one two three"}\n{"key": "b", "text": "x y z"}\n{"key": "c", "text": \n'
    )
    code, out, err = simdb(capsys, "ingest", "docs", str(bad))
    assert (code, out) == (1, "")
    assert err == (
        f"simdb: error: {bad}:3: not valid JSON (Expecting value at column 22) "
        "(fix it, or pass --skip-errors to skip bad records and go on)\n"
    )
    assert rows(conn) == before
    code, out, _ = simdb(capsys, "ingest", "docs", str(bad), "--skip-errors")
    assert (code, untimed(out)) == (
        0,
        "ingested 2 documents: 2 new, 0 updated, 0 unchanged; skipped 1 (1 malformed)\n",
    )


def test_bad_records(capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path) -> None:
    simdb(capsys, "create", "docs")
    missing = tmp_path / "m.jsonl"
    missing.write_text('{"id": 1, "body": "text"}\n')
    assert simdb(capsys, "ingest", "docs", str(missing)) == (
        1,
        "",
        f"simdb: error: {missing}:1: no field 'key' (fields: id, body) (name the right one with --key-field)\n",
    )
    not_object = tmp_path / "n.jsonl"
    not_object.write_text("[1, 2]\n")
    assert simdb(capsys, "ingest", "docs", str(not_object))[2] == (
        f"simdb: error: {not_object}:1: a JSON line must be an object "
        "(fix it, or pass --skip-errors to skip bad records and go on)\n"
    )
    ragged = tmp_path / "r.csv"
    ragged.write_text("key,text\nk1,fine text\nk2,too,many\n")
    assert simdb(capsys, "ingest", "docs", str(ragged)) == (
        1,
        "",
        f"simdb: error: {ragged}:3: malformed CSV row: 3 fields where the header has 2 "
        "(fix it, or pass --skip-errors to skip bad records and go on)\n",
    )
    assert rows(conn) == []
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "nope.txt")) == (
        1,
        "",
        f"simdb: error: no such file or folder: {tmp_path / 'nope.txt'} (check the path)\n",
    )


def test_encoding_binary_and_unreadable_files(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    simdb(capsys, "create", "docs")
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "latin1.txt").write_bytes("café crème brûlée à la carte".encode("latin-1"))
    (folder / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (folder / "broken").symlink_to(folder / "does-not-exist")
    code, _, err = simdb(capsys, "ingest", "docs", str(folder))
    assert code == 1
    assert err == (
        f"simdb: error: cannot read {folder / 'broken'}: it is a symbolic link to {folder / 'does-not-exist'}, "
        "which does not exist (check the path, or pass --skip-errors to count such files and go on)\n"
    )
    assert rows(conn) == []
    code, out, _ = simdb(capsys, "ingest", "docs", str(folder), "--skip-errors")
    assert (code, untimed(out)) == (
        0,
        "ingested 1 documents: 1 new, 0 updated, 0 unchanged; skipped 2 (1 binary, 1 unreadable); "
        "1 had invalid UTF-8 replaced by U+FFFD\n",
    )
    expected = fingerprint(
        "café crème brûlée à la carte".encode("latin-1").decode("utf-8", "replace"), spec=NEW_INDEX_SPEC
    )
    assert [(k, v & (2**64 - 1)) for k, v in rows(conn)] == [(str(folder / "latin1.txt"), expected)]


def test_a_symbolic_link_loop_and_a_folder_are_called_what_they_are(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """A loop of symbolic links was reported as a link to a missing target, and `query --file`
    with a folder called it "a pipe, socket or device"."""
    simdb(capsys, "create", "docs")
    folder = tmp_path / "looped"
    folder.mkdir()
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    code, _, err = simdb(capsys, "ingest", "docs", str(folder / "a"))
    assert (code, err) == (
        1,
        f"simdb: error: cannot read {folder / 'a'}: it is a symbolic link in a loop of links "
        f"({folder / 'a'} -> {folder / 'b'} -> ...), which leads to no file "
        "(check the file, or pass --skip-errors to count such files and go on)\n",
    )
    code, _, err = simdb(capsys, "query", "docs", "--file", str(folder))
    assert (code, err) == (
        1,
        f"simdb: error: {folder} is a folder, and --file reads one file "
        "(give a file in it; `simdb ingest` reads folders)\n",
    )
    code, _, err = simdb(capsys, "fingerprint", "--file", str(folder))
    assert (code, err) == (
        1,
        f"simdb: error: {folder} is a folder, and --file reads one file "
        "(give a file in it; `simdb ingest` reads folders)\n",
    )


def test_database_down_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = simdb(capsys, "--dsn", "postgresql://postgres@127.0.0.1:1/none", "list")
    assert (code, out) == (1, "")
    assert err.startswith("simdb: error: cannot connect to PostgreSQL (--dsn): ")
    assert err.endswith(
        "(check that the server is up and the DSN is right; with no DSN simdb uses its own server)\n"
    )
    assert err.count("\n") == 1


def test_bad_connection_string(capsys: pytest.CaptureFixture[str]) -> None:
    assert simdb(capsys, "--dsn", "foo", "list") == (
        1,
        "",
        'simdb: error: bad connection string (--dsn): missing "=" after "foo" in connection info string '
        "(write a URL like postgresql://user@host:5432/dbname, or key=value pairs: host=... dbname=...)\n",
    )


def test_drop(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    simdb(capsys, "create", "docs")
    assert simdb(capsys, "drop", "docs") == (
        1,
        "",
        "simdb: error: dropping index 'docs' needs confirmation (pass --yes)\n",
    )
    assert simdb(capsys, "drop", "docs", "--yes") == (0, "dropped index docs\n", "")
    assert conn.execute("SELECT to_regclass('simdb.docs')").fetchone() == (None,)


def test_bench_reports_exact_recall(capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(BASE)
    code, out, _ = simdb(
        capsys,
        "bench",
        "--rows",
        "3000",
        "--queries",
        "30",
        "--brute-force-queries",
        "10",
        "--text",
        str(tmp_path),
        "--json",
    )
    assert code == 0
    report = json.loads(out)
    figures = report
    assert (figures["rows"], figures["queries"], figures["brute_force_queries"]) == (3000, 30, 10)
    assert figures["recall"] == figures["brute_force_recall"] == figures["pairs_recall"] == 1.0
    # the hand-written block table answers the same queries exactly, in the same run, and finds
    # the same pairs
    assert figures["hand_recall"] == 1.0 and figures["rounds"] == 3
    assert figures["hand_pairs"] == figures["pairs"] == figures["sql_pairs"] > 0
    # simdb pairs ran as a command of its own, its memory counted; first-touch queries timed;
    # simdb plan's figures for the same plan beside the measured ones; truth by a full scan
    assert figures["pairs_peak_rss_mb"] > 0 and figures["first_touch_p50_ms"] > 0
    assert set(figures["predicted"]) == {"online_ms", "sql_pairs_s", "bytes_per_row", "candidates_per_query"}
    assert figures["truth_from"] == "scan"
    # pairs --new after 1% rows added: the full run's pairs that involve an added row
    added = figures["added"]
    assert added["rows"] == 30 and added["exact"] is True and 0 < added["pairs"] < added["full_pairs"]
    assert (
        figures["vs_hand_written"]["bytes_per_row"]
        == figures["bytes_per_row"] / figures["hand_bytes_per_row"]
    )
    if figures["hnsw"] is not None:  # the embedded PostgreSQL ships pgvector
        assert 0.0 <= figures["hnsw"]["recall"] <= 1.0 and figures["hnsw"]["build_s"] > 0
    assert report["fingerprint"]["files"] == 1
    rates = report["fingerprint"]["rates"]  # the kernels beside the code before them and the textbook method
    assert len(rates) == 9 and all(rate > 0 for rate in rates.values())
    ingested = report["fingerprint"]["ingest"]  # end to end in both modes, with the time breakdown
    assert [(run["mode"], run["jobs"]) for run in ingested] == [
        ("simhash", 1),
        ("simhash", 2),
        ("jaccard", 1),
        ("jaccard", 2),
    ]
    assert all(run["megabytes_per_s"] > 0 and run["documents_per_s"] > 0 for run in ingested)
    assert all(
        set(run["seconds"]) == {"read", "sketch", "store", "btrees", "vacuum", "total"} for run in ingested
    )
    assert set(report["fingerprint"]["ratios"]) == {
        "fingerprint v2 / before the kernels",
        "fingerprint v1 / before the kernels",
        "fingerprints v2, batched / before the kernels",
        "fingerprints v1, batched / before the kernels",
        "signature / before the kernels",
        "fingerprint v2 / textbook",
    }
    for name in (
        "load_rows_per_s",
        "query_p50_ms",
        "query_p99_ms",
        "brute_force_p50_ms",
        "bytes_per_row",
        "pairs_seconds",
        "hand_pairs_seconds",
        "sql_pairs_seconds",
        "index_build_s",
        "hand_p50_ms",
        "hand_bytes_per_row",
        "hand_load_s",
        "roundtrip_p50_ms",
    ):
        assert figures[name] > 0
    # the scratch index and the hand-written table are gone
    assert conn.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)
    assert conn.execute("SELECT to_regclass(%s)", (f"simdb_bench_hand_{os.getpid()}",)).fetchone() == (None,)


def test_delete_and_prune(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    simdb(capsys, "create", "docs")
    stdin = "".join(
        json.dumps({"key": f"k{i}", "text": f"document number {i} words"}) + "\n" for i in range(4)
    )
    simdb(capsys, "ingest", "docs", "-", stdin=stdin.encode())
    assert simdb(capsys, "delete", "docs", "k0", "k1", "missing") == (0, "deleted 2 of 3 keys\n", "")
    assert [key for key, _ in rows(conn)] == ["k2", "k3"]
    conn.execute("UPDATE simdb.docs SET seen_at = now() - interval '3 days' WHERE key = 'k2'")
    assert simdb(capsys, "prune", "docs", "--older-than", "2d") == (
        0,
        "pruned 1 rows not seen for 2d\n",  # (it said "2 days, 0:00:00")
        "",
    )
    assert [key for key, _ in rows(conn)] == ["k3"]
    assert simdb(capsys, "prune", "docs", "--older-than", "1d12h", "--json") == (
        0,
        '{"index": "docs", "removed": 0, "older_than": "1d12h", "older_than_seconds": 129600}\n',
        "",
    )
    assert simdb(capsys, "prune", "docs", "--older-than", "soon") == (
        1,
        "",
        "simdb: error: bad duration 'soon' (write a number and a unit (s, m, h, d, w), e.g. 30d or 1d12h)\n",
    )
    # removing more than half of the rows needs --yes (no terminal to ask)
    code, out, err = simdb(capsys, "prune", "docs", "--older-than", "0s")
    assert (code, out) == (1, "") and "would remove 1 of its 1 rows; nothing was removed" in err
    assert "--yes" in err and [key for key, _ in rows(conn)] == ["k3"]
    assert simdb(capsys, "prune", "docs", "--older-than", "0s", "--yes")[:2] == (
        0,
        "pruned 1 rows not seen for 0s\n",
    )
    assert rows(conn) == []


def test_jsonl_errors_read_as_one_sentence(tmp_path: Path) -> None:
    """json's "Unterminated string starting at" read "starting at at column"."""
    cases = {
        '{"key": "a", "text": "no end\n': "Unterminated string starting at column 22",
        '{"key": "a", "text": "a\tb"}\n': "Invalid control character at column 24",
        '{"key": "a", "text": }\n': "Expecting value at column 22",
    }
    for line, reason in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(line)
        with pytest.raises(InputError) as raised:
            list(readers.read([str(bad)], readers.Options("jsonl")))
        assert raised.value.message == f"{bad}:1: not valid JSON ({reason})"


def test_prune_refuses_a_duration_too_long_in_one_line(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    """99999999999d was an OverflowError traceback."""
    simdb(capsys, "ingest", "docs", "-", "--create", stdin=b'{"key": "k", "text": "some words here"}\n')
    for duration in ("99999999999d", "1000000d1s", "9" * 5000 + "s"):
        assert simdb(capsys, "prune", "docs", "--older-than", duration) == (
            1,
            "",
            f"simdb: error: duration {duration!r} is too long (the longest allowed is 1000000d, "
            "about 2,700 years)\n",
        )
    assert simdb(capsys, "prune", "docs", "--older-than", "1000000d") == (
        0,
        "pruned 0 rows not seen for 1000000d\n",
        "",
    )
    assert [key for key, _ in rows(conn)] == ["k"]


def test_parallel_ingest_equals_serial(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    lines = [
        json.dumps({"key": f"k{i}", "text": f"document {i} about topic {i % 7} and more {i * 3}"})
        for i in range(700)
    ]
    lines[300] = json.dumps({"key": "k299", "text": "a later record with an earlier key replaces it"})
    lines[450] = json.dumps({"key": "blank", "text": "..."})
    source = tmp_path / "docs.jsonl"
    source.write_text("\n".join(lines) + "\n")
    simdb(capsys, "create", "serial")
    simdb(capsys, "create", "parallel")
    serial = simdb(capsys, "ingest", "serial", str(source), "--jobs", "1", "--batch-size", "50", "--json")
    parallel = simdb(capsys, "ingest", "parallel", str(source), "--jobs", "2", "--batch-size", "50", "--json")
    serial_report, parallel_report = json.loads(serial[1]), json.loads(parallel[1])
    for report in (serial_report, parallel_report):  # where the time went, in seconds (first loads)
        seconds = report.pop("seconds")
        assert (
            set(seconds) == {"read", "sketch", "store", "btrees", "vacuum", "total"} and seconds["store"] > 0
        )
    assert (
        serial_report
        == parallel_report
        == {
            "inserted": 698,
            "updated": 1,  # k299 again, in a later batch
            "unchanged": 0,
            "skipped": {"empty": 1},
            "repaired": 0,
            "bytes": source.stat().st_size,  # every line read
            "bytes_passed_over": 0,
        }
    )
    assert rows(conn, "serial") == rows(conn, "parallel")
    stored = {key: value & (2**64 - 1) for key, value in rows(conn, "parallel")}
    assert stored["k299"] == fingerprint(
        "a later record with an earlier key replaces it", spec=NEW_INDEX_SPEC
    )


def test_dsn_is_accepted_after_the_command(
    capsys: pytest.CaptureFixture[str], dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`simdb COMMAND --dsn URL` works like `simdb --dsn URL COMMAND`, and wins."""
    monkeypatch.delenv("SIMDB_DSN")
    assert simdb(capsys, "create", "docs", "--dsn", dsn)[0] == 0
    assert simdb(capsys, "list", "--dsn", dsn, "--json")[1].startswith('[{"name": "docs"')
    unreachable = "postgresql://postgres@127.0.0.1:1/nowhere"
    assert simdb(capsys, "--dsn", unreachable, "list", "--dsn", dsn)[0] == 0
    code, _, err = simdb(capsys, "--dsn", dsn, "list", "--dsn", unreachable)
    assert code == 1 and "127.0.0.1" in err and "port 1" in err


def test_csv_with_a_byte_order_mark_and_other_delimiters(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    """A UTF-8 BOM does not become part of the first field's name (CSV and
    JSONL), and --delimiter reads ';' or tab separated files."""
    text = "a document about rivers, bridges and the towns along them"
    (tmp_path / "bom.csv").write_bytes(codecs.BOM_UTF8 + f'key,text\nk1,"{text}"\n'.encode())
    (tmp_path / "bom.jsonl").write_bytes(codecs.BOM_UTF8 + json.dumps({"key": "j1", "text": text}).encode())
    (tmp_path / "semi.csv").write_text(f"key;text\ns1;{text}, again\n")
    (tmp_path / "tabs.tsv").write_text(f"key\ttext\nt1\t{text}; and more\n")
    assert (
        simdb(capsys, "ingest", "docs", str(tmp_path / "bom.csv"), str(tmp_path / "bom.jsonl"), "--create")[0]
        == 0
    )
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "semi.csv"), "--delimiter", ";")[0] == 0
    done = simdb(
        capsys, "ingest", "docs", str(tmp_path / "tabs.tsv"), "--format", "csv", "--delimiter", "tab"
    )
    assert done[0] == 0, done
    assert sorted(str(key) for (key,) in conn.execute("SELECT key FROM simdb.docs")) == [
        "j1",
        "k1",
        "s1",
        "t1",
    ]
    code, _, err = simdb(capsys, "ingest", "docs", str(tmp_path / "semi.csv"), "--delimiter", ";;")
    assert (
        code == 1 and err == "simdb: error: bad CSV delimiter ';;' (give one character, e.g. ';', or 'tab')\n"
    )
