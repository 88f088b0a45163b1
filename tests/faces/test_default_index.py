"""The default index finds single edits, and the CLI says what an index finds: the words of
`create`, `list` and `ingest --create`, `query`'s word on a row beyond reach, `fingerprint --index`."""

from __future__ import annotations

import json
import random

import psycopg
import pytest
from support import simdb

from simdb.sketch.simhash import (
    fingerprint,
)


def _records(texts: dict[str, str]) -> bytes:
    """JSONL records of these texts by key, for `simdb ingest NAME -`."""
    return "".join(json.dumps({"key": key, "text": text}) + "\n" for key, text in texts.items()).encode()


def _document(rng: random.Random, lines: int) -> list[str]:
    words = [f"w{n}" for n in range(3000)]
    return [" ".join(rng.choice(words) for _ in range(10)) for _ in range(lines)]


def test_create_list_and_ingest_say_what_the_index_finds(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    code, out, _ = simdb(capsys, "create", "plain")
    assert code == 0
    assert "64-bit one-bit MinHash, max distance 5, " in out and "spec v3" in out
    assert (
        "; it finds 9 in 10 copies at Jaccard >= 0.90 (a changed line in documents over 1.4 KB); SQL: " in out
    )
    code, out, _ = simdb(capsys, "create", "close", "--fingerprint-spec", "2")
    assert code == 0 and "64-bit SimHash, max distance 3, 4 blocks" in out and "at Jaccard >= 0.99" in out
    code, out, _ = simdb(capsys, "list")
    lines = out.splitlines()
    assert code == 0
    close = next(i for i, line in enumerate(lines) if line.startswith("close "))
    assert "v2" in lines[close] and lines[close + 1].strip().startswith(
        "finds 9 in 10 copies at Jaccard >= 0.99"
    )
    code, out, err = simdb(capsys, "ingest", "fresh", "-", "--create", stdin=_records({"k": "a few words"}))
    assert code == 0, err
    assert "created simhash index fresh: 64-bit one-bit MinHash, max distance 5" in err
    assert "it finds 9 in 10 copies" in err


def test_the_default_finds_a_copy_with_one_line_changed_where_simhash_at_3_does_not(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """A 3 KB document and copies of it each with one line replaced: the default index finds
    every copy; a SimHash index within 3 bits (the former default) misses some of the same."""
    rng = random.Random(7)
    original = _document(rng, 50)
    copies = {}
    for n in range(20):
        edited = list(original)
        edited[rng.randrange(len(edited))] = " ".join(f"new{n}x{i}" for i in range(10))
        copies[f"copy{n}"] = "\n".join(edited)
    for name, options in (("default", []), ("former", ["--fingerprint-spec", "2"])):
        assert simdb(capsys, "create", name, *options)[0] == 0
        texts = {"original": "\n".join(original), **copies}
        assert simdb(capsys, "ingest", name, "-", stdin=_records(texts))[0] == 0
    found = {
        name: {row[0] for row in conn.execute("SELECT key FROM simdb.near_key(%s, 'original')", (name,))}
        for name in ("default", "former")
    }
    assert found["default"] == {"original", *copies}
    assert len(found["former"]) < len(found["default"])


def test_query_says_where_the_nearest_row_beyond_reach_is(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    rng = random.Random(3)
    original = _document(rng, 40)
    far = list(original)
    for at in range(0, 40, 5):  # 8 lines of 40 replaced: Jaccard about 0.6-0.7
        far[at] = " ".join(f"other{at}x{i}" for i in range(10))
    assert simdb(capsys, "create", "docs")[0] == 0
    texts = {"a": "\n".join(original), "b": "\n".join(far)}
    assert simdb(capsys, "ingest", "docs", "-", stdin=_records(texts))[0] == 0
    code, out, err = simdb(capsys, "query", "docs", "--key", "a")
    assert code == 0
    assert out.splitlines()[1:] == ["       0  a"]
    assert "the nearest other row is b at distance " in err
    assert "beyond the reach of index docs" in err and "--mode jaccard --threshold 0." in err
    code, out, err = simdb(
        capsys, "query", "docs", "--text", "unrelated words that share nothing at all here"
    )
    assert code == 0 and "no rows within 5 bits" in err and "nearest other row" not in err


def test_attach_gives_simdbs_default_where_simdb_fingerprints_and_the_librarys_where_the_app_does(
    capsys: pytest.CaptureFixture[str], dsn: str, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    """With a text column simdb computes the fingerprints: one-bit MinHash within 5. A column the
    application fills itself holds what simdb.fingerprint computes, SimHash: the index says so."""
    conn.execute("CREATE TABLE public.notes (id int PRIMARY KEY, body text, fp bigint, own bigint)")
    conn.execute("INSERT INTO public.notes VALUES (1, 'a note about gardens and their flowers', NULL, NULL)")
    table = ("--table", "public.notes", "--key-column", "id")
    assert (
        simdb(capsys, "attach", "filled", *table, "--fingerprint-column", "fp", "--text-column", "body")[0]
        == 0
    )
    assert simdb(capsys, "attach", "own", *table, "--fingerprint-column", "own")[0] == 0
    code, out, _ = simdb(capsys, "list", "--json")
    assert code == 0
    found = {entry["name"]: (entry["spec_version"], entry["max_distance"]) for entry in json.loads(out)}
    assert found == {"filled": (3, 5), "own": (2, 3)}


def test_fingerprint_index_computes_what_the_index_stores(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    """`simdb fingerprint --index NAME` answers "what do I give this index's SQL functions": its
    spec and width, whatever the command's own default."""
    assert simdb(capsys, "create", "close", "--fingerprint-spec", "2")[0] == 0
    assert simdb(capsys, "create", "wide", "--bits", "128")[0] == 0
    text = "a short text about the index at hand"
    for name, spec, bits in (("close", 2, 64), ("wide", 3, 128)):
        code, out, _ = simdb(capsys, "fingerprint", "--index", name, "--text", text)
        assert (code, out) == (0, f"{fingerprint(text, spec=spec, bits=bits):0{bits // 4}x}\n")
    code, _, err = simdb(capsys, "fingerprint", "--index", "close", "--text", text, "--fingerprint-spec", "3")
    assert code == 2 and "--index takes the index's own settings: leave out --fingerprint-spec" in err
