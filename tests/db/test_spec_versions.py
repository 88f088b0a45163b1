"""Fingerprint specs side by side: v1 indexes keep answering with v1, new indexes use v2, and an
index created with v3 (one-bit MinHash) fingerprints everything under v3."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from support import Conn, simdb

from simdb import ingest, query
from simdb.errors import IndexMismatch
from simdb.follow import keep, side
from simdb.index import lifecycle as index
from simdb.index.modes import JaccardSpec, SimhashSpec
from simdb.sketch.bits import hamming, to_hex, to_unsigned
from simdb.sketch.simhash import fingerprint
from simdb.sources.readers import Document

# Repeated shingles, so the two specs give different fingerprints.
TEXT = "to be or not to be " * 20 + " ".join(f"line{i} of the play" for i in range(60))
COPY = TEXT.replace("line30 ", "verse30 ", 1)

# Prose with one word replaced: 1 bit apart under spec v3, 6 under spec v2 (pinned in the test).
PROSE = (
    "A near-duplicate is a copy that someone changed a little: a word replaced, a line added, "
    "a sentence moved or the whitespace reflowed. Search engines drop such copies from their "
    "results, archives keep one of each, and teachers look for them in essays. SimHash gives a "
    "document a fingerprint of sixty-four bits that moves a few bits when the text changes a "
    "little, so that copies are found by counting the bits in which two fingerprints differ. "
    "Manku, Jain and Das Sarma showed in 2007 how to find every fingerprint within three bits of a "
    "query among billions: cut the bits into blocks, and keep one sorted table per choice of "
    "blocks, so that one of the tables agrees with the query on a long prefix. MinHash estimates "
    "the Jaccard similarity of two sets of shingles, and its lowest bits make a fingerprint whose "
    "bits differ less often than those of a SimHash when a single word is edited."
)
EDITED = PROSE.replace("teachers", "editors")


def stored(conn: Conn, name: str) -> dict[str, int]:
    found = conn.execute(f"SELECT key, fingerprint FROM simdb.{name}").fetchall()
    return {str(key): to_unsigned(int(str(value))) for key, value in found}


def test_v1_and_v2_indexes_side_by_side(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path
) -> None:
    assert fingerprint(TEXT, spec=1) != fingerprint(TEXT, spec=2)
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(COPY)
    assert simdb(capsys, "create", "old", "--fingerprint-spec", "1")[0] == 0
    assert simdb(capsys, "create", "new", "--fingerprint-spec", "2")[0] == 0
    for name in ("old", "new"):
        assert simdb(capsys, "ingest", name, str(tmp_path))[0] == 0
    keys = (str(tmp_path / "a.txt"), str(tmp_path / "b.txt"))
    for name, spec in (("old", 1), ("new", 2)):
        assert stored(conn, name) == {
            keys[0]: fingerprint(TEXT, spec=spec),
            keys[1]: fingerprint(COPY, spec=spec),
        }

    code, out, _ = simdb(capsys, "list", "--json")
    assert code == 0
    assert {entry["name"]: entry["spec_version"] for entry in json.loads(out)} == {"old": 1, "new": 2}
    code, out, _ = simdb(capsys, "list")
    assert [line.split()[4] for line in out.splitlines()[1::2]] == ["v2", "v1"]

    for name in ("old", "new"):  # a query is fingerprinted under the index's own spec
        code, out, _ = simdb(capsys, "query", name, "--text", TEXT, "--json")
        assert code == 0
        nearest = json.loads(out)[0]
        assert (nearest["key"], nearest["distance"]) == (keys[0], 0)

    spec1 = simdb(capsys, "fingerprint", "--text", TEXT, "--fingerprint-spec", "1")
    assert spec1 == (0, to_hex(fingerprint(TEXT, spec=1)) + "\n", "")
    # the command prints what a new index stores, spec v3; simdb.fingerprint computes v2 unless told
    assert simdb(capsys, "fingerprint", "--text", TEXT) == (0, to_hex(fingerprint(TEXT, spec=3)) + "\n", "")
    assert fingerprint(TEXT) == fingerprint(TEXT, spec=2)


@pytest.mark.parametrize(("spec", "bits"), [(1, 64), (3, 64), (3, 128)])
def test_library_ingest_into_an_index_uses_its_spec(conn: Conn, spec: int, bits: int) -> None:
    made = index.create(conn, "old", SimhashSpec(fingerprint_spec=spec, bits=bits))
    assert made.spec_version == spec and index.get(conn, "old").spec_version == spec
    ingest.ingest(conn, index.get(conn, "old"), [Document("a", TEXT, 0), Document("b", COPY, 0)])
    expected = {"a": fingerprint(TEXT, spec=spec, bits=bits), "b": fingerprint(COPY, spec=spec, bits=bits)}
    if bits == 64:
        assert stored(conn, "old") == expected
    assert index.get(conn, "old").sketch(TEXT) == expected["a"] != fingerprint(TEXT, spec=2, bits=bits)
    found = query.near(conn, index.get(conn, "old"), expected["a"])
    assert [(m.key, m.distance) for m in found] == [
        ("a", 0),
        ("b", (expected["a"] ^ expected["b"]).bit_count()),
    ]


def test_a_spec3_index_finds_a_one_word_edit_that_spec2_misses(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path
) -> None:
    assert hamming(fingerprint(PROSE, spec=3), fingerprint(EDITED, spec=3)) == 1
    assert hamming(fingerprint(PROSE, spec=2), fingerprint(EDITED, spec=2)) == 6
    (tmp_path / "a.txt").write_text(PROSE)
    (tmp_path / "b.txt").write_text(EDITED)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    # the same k for both (the default of spec 3 is 5, of spec 2 3)
    assert simdb(capsys, "create", "edits", "--fingerprint-spec", "3", "--max-distance", "3") == (
        0,
        "created simhash index edits: 64-bit one-bit MinHash, max distance 3, 4 blocks, 4 tables "
        "(prefix 16 bits), features word:3, spec v3; it finds 9 in 10 copies at Jaccard >= 0.94 "
        '(a changed line in documents over 2.5 KB); SQL: simdb."edits"\n',
        "",
    )
    assert simdb(capsys, "create", "plain", "--fingerprint-spec", "2") == (
        0,
        "created simhash index plain: 64-bit SimHash, max distance 3, 4 blocks, 4 tables "
        "(prefix 16 bits), features word:3, spec v2; it finds 9 in 10 copies at Jaccard >= 0.99 "
        '(a changed line in documents over 19 KB); SQL: simdb."plain"\n',
        "",
    )
    for name in ("edits", "plain"):
        code, out, _ = simdb(capsys, "ingest", name, str(tmp_path))
        assert code == 0 and out.startswith("ingested 2 documents: 2 new,")
    assert simdb(capsys, "query", "edits", "--file", str(a)) == (
        0,
        f"distance  key\n       0  {a}\n       1  {b}\n",
        "",
    )
    assert simdb(capsys, "query", "edits", "--text", EDITED) == (
        0,
        f"distance  key\n       0  {b}\n       1  {a}\n",
        "",
    )
    assert simdb(capsys, "query", "plain", "--file", str(a)) == (0, f"distance  key\n       0  {a}\n", "")
    code, out, _ = simdb(capsys, "list")
    assert code == 0 and [line.split()[4] for line in out.splitlines()[1::2]] == ["v3", "v2"]
    assert simdb(capsys, "fingerprint", "--text", PROSE, "--fingerprint-spec", "3") == (
        0,
        to_hex(fingerprint(PROSE, spec=3)) + "\n",
        "",
    )
    # v3 is another method, not an older spec: reindex leaves it (v1 indexes move to v2)
    assert simdb(capsys, "reindex", "edits") == (0, "index edits already uses spec v3; nothing to do\n", "")


def test_unknown_specs_are_refused(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    code, _, err = simdb(capsys, "create", "x", "--fingerprint-spec", "4")
    assert (code, err) == (1, "simdb: error: unknown fingerprint spec 4 (use one of 1, 2, 3)\n")
    code, _, err = simdb(capsys, "create", "x", "--mode", "jaccard", "--fingerprint-spec", "1")
    assert code == 2 and "--fingerprint-spec applies to --mode simhash only" in err
    assert conn.execute("SELECT count(*) FROM simdb._indexes").fetchone() == (0,)

    index.create(conn, "future")
    conn.execute("UPDATE simdb._indexes SET spec_version = 4 WHERE name = 'future'")
    with pytest.raises(IndexMismatch, match="spec v4; this simdb makes 64/128-bit values of spec v1/v2/v3"):
        index.get(conn, "future")


def test_reindex_moves_an_attached_index_while_queries_run(
    capsys: pytest.CaptureFixture[str], conn: Conn, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn.execute("CREATE TABLE public.plays (id int PRIMARY KEY, body text, live boolean NOT NULL)")
    texts = {i: TEXT.replace("line1 ", f"scene{i} ", 1) for i in range(23)}
    texts[23] = "..."  # no shingles: no row in the index
    for number, body in texts.items():
        conn.execute("INSERT INTO public.plays VALUES (%s, %s, %s)", (number, body, number != 5))
    code, _, _ = simdb(
        capsys, "attach", "docs", "--table", "plays", "--key-column", "id", "--text-column", "body",
        "--where", "live", "--fingerprint-spec", "1",
    )  # fmt: skip
    assert code == 0
    live = {str(n): body for n, body in texts.items() if n not in (5, 23)}
    assert stored(conn, "docs") == {key: fingerprint(body, spec=1) for key, body in live.items()}

    answers: list[int] = []
    done: list[int] = []
    monkeypatch.setattr(side, "BATCH", 5)
    with psycopg.connect(dsn, autocommit=True) as other:

        def query_meanwhile(rows: int) -> None:  # as each part of a batch is done, from another session
            found = other.execute("SELECT count(*) FROM simdb.near_key('docs', '0', 3)").fetchone()
            answers.append(int(str(found[0])) if found else -1)
            done.append(rows)

        report = keep.reindex(conn, "docs", progress=query_meanwhile)
    assert (report.from_version, report.to_version, report.rows) == (1, 2, 22)
    assert sum(done) == 22 and len(answers) >= 5 and all(count >= 1 for count in answers)
    assert stored(conn, "docs") == {key: fingerprint(body, spec=2) for key, body in live.items()}
    assert index.get(conn, "docs").spec_version == 2
    assert simdb(capsys, "sync", "docs", "--full") == (
        0,
        "synced: 0 new, 0 updated, 0 removed, 1 without text (not indexed); unchanged rows were compared by hash, not fingerprinted\n",
        "",
    )  # the content hashes still match the text
    assert simdb(capsys, "reindex", "docs") == (0, "index docs already uses spec v2; nothing to do\n", "")


def test_reindex_of_an_index_from_files_says_what_to_do(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    made = index.create(conn, "files", SimhashSpec(fingerprint_spec=1))
    ingest.ingest(conn, made, [Document("a", TEXT, 0)])
    code, _, err = simdb(capsys, "reindex", "files")
    assert (code, err) == (
        1,
        "simdb: error: index 'files' was ingested from documents, whose text simdb does not keep, so it "
        "cannot move it from spec v1 to v2 by itself (create a new index (`simdb create files_v2`), ingest "
        "the same sources into it again, and drop the old one once it is full)\n",
    )
    assert stored(conn, "files") == {"a": fingerprint(TEXT, spec=1)}


def test_reindex_of_a_signature_v1_jaccard_index_says_what_to_do(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    made = index.create(conn, "pages", JaccardSpec(signature_spec=1))
    ingest.ingest(conn, made, [Document("a", TEXT, 0)])
    code, _, err = simdb(capsys, "reindex", "pages")
    assert code == 1 and err.startswith(
        "simdb: error: jaccard index 'pages' keeps signature spec v1: v3 stores other sketches under "
        "other B-trees and cannot replace them in place (attach or ingest the same sources into a new index"
    )
    assert [m.key for m in query.near(conn, index.get(conn, "pages"), made.sketch(TEXT))] == ["a"]
