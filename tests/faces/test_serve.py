"""simdb serve without a browser (Starlette's TestClient), and ingest --keep-text: the pages call
the library and show what the CLI prints; only keys of the index are read; read-only; a token
where the server listens beyond the loopback; a slow request does not hold up the others."""

from __future__ import annotations

import html
import os
import re
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import markupsafe
import psycopg
import pytest
from psycopg import sql
from starlette.testclient import TestClient
from support import Conn, simdb
from support.corpus import CLUSTERS, SCRIPT, write_folder, write_records
from support.serve import free_port

from simdb import duplicates, ingest, query
from simdb.index import lifecycle as index
from simdb.index import names, texts
from simdb.serve import compare, create_app, is_loopback, token_for
from simdb.sources import readers

LOCAL = "http://127.0.0.1"


@pytest.fixture
def corpus(capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path) -> dict[str, str]:
    """Index docs: the planted near-duplicates as files (k = 6); returns {key: text}."""
    keys = write_folder(tmp_path / "docs")
    # SimHash (spec 2): the distances below are of its fingerprints
    assert simdb(capsys, "create", "docs", "--max-distance", "6", "--fingerprint-spec", "2")[0] == 0
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "docs"))[0] == 0
    return keys


@pytest.fixture
def client(dsn: str) -> Iterator[TestClient]:
    with TestClient(create_app(dsn), base_url=LOCAL) as session:
        yield session


def _key(keys: dict[str, str], name: str) -> str:
    return next(key for key in keys if key.endswith("/" + name))


def _listed(page: str) -> list[list[tuple[str, str]]]:
    """Each cluster's (action, key) rows, in the page's order."""
    sections = re.findall(r'<section class="card cluster".*?</section>', page, re.S)
    return [
        [
            (action, html.unescape(key))
            for action, key in re.findall(
                r'<tr class="member (keep|drop)">.*?<td class="key">(.*?)</td>', section, re.S
            )
        ]
        for section in sections
    ]


def test_clusters_page_lists_the_planted_clusters_largest_first(
    corpus: dict[str, str], client: TestClient
) -> None:
    answer = client.get("/i/docs/clusters", params={"keep": "longest"})
    assert answer.status_code == 200
    listed = _listed(answer.text)
    planted = [sorted(_key(corpus, name) for name in group) for group in CLUSTERS]
    assert [sorted(key for _, key in cluster) for cluster in listed] == planted  # (3, 2, 2 keys)
    assert [[action for action, _ in cluster].count("keep") for cluster in listed] == [1, 1, 1]
    longest = max(CLUSTERS[0], key=lambda name: (len(corpus[_key(corpus, name)].encode()), name))
    assert listed[0][0] == ("keep", _key(corpus, longest))


def test_csv_export_is_what_dedup_prints(
    capsys: pytest.CaptureFixture[str], corpus: dict[str, str], client: TestClient
) -> None:
    for rule in duplicates.KEEP_RULES:
        exported = client.get("/i/docs/clusters.csv", params={"keep": rule})
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        code, printed, _ = simdb(capsys, "dedup", "docs", "--keep", rule)
        assert code == 0 and exported.text == printed and printed.count("\n") == 8


def test_side_by_side_marks_the_edited_words_and_gives_both_scores(
    conn: Conn, corpus: dict[str, str], client: TestClient
) -> None:
    a, b = _key(corpus, "alpha.txt"), _key(corpus, "alpha-draft.txt")
    page = client.get("/i/docs/compare", params={"a": a, "b": b}).text
    assert re.findall(r'<mark class="del">(.*?)</mark>', page) == [
        corpus[a].split(" ")[30],
        corpus[a].split(" ")[120],
    ]
    assert re.findall(r'<mark class="ins">(.*?)</mark>', page) == ["zebra", "quokka"]
    stored = [query.stored(conn, index.get(conn, "docs"), key) for key in (a, b)]
    distance = (stored[0].sketch ^ stored[1].sketch).bit_count()  # type: ignore[union-attr,operator]
    assert distance == 7  # (beyond k = 6: the two are in one cluster through alpha-copy.txt)
    assert f'<b id="score">{distance}</b>' in page
    exact = compare.shingle_jaccard(corpus[a], corpus[b], index.get(conn, "docs").features)
    assert exact is not None and 0.5 < exact < 1
    assert f'<b id="jaccard">{exact:.3f}</b>' in page


def test_a_document_is_shown_as_text_never_as_markup(corpus: dict[str, str], client: TestClient) -> None:
    a, b = _key(corpus, "script.txt"), _key(corpus, "script-copy.txt")
    page = client.get("/i/docs/compare", params={"a": a, "b": b})
    assert SCRIPT not in page.text and page.text.count(str(markupsafe.escape(SCRIPT))) == 2
    assert "script-src" not in page.headers["content-security-policy"]  # (default-src 'none': no script)
    assert "default-src 'none'" in page.headers["content-security-policy"]


@pytest.mark.parametrize("key", ["/etc/passwd", "../../../../etc/passwd", "/etc/hostname"])
def test_a_key_that_is_not_in_the_index_is_never_read(
    corpus: dict[str, str], client: TestClient, key: str
) -> None:
    other = _key(corpus, "alpha.txt")
    for a, b in ((key, other), (other, key)):
        answer = client.get("/i/docs/compare", params={"a": a, "b": b})
        assert answer.status_code == 404
        assert "has no key" in answer.text and "root:" not in answer.text
    answer = client.post("/i/docs/compare", data={"text": "some words to compare here", "b": key})
    assert answer.status_code == 404 and "root:" not in answer.text


def test_a_record_keyed_like_a_file_is_not_read_from_the_disk(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path, client: TestClient
) -> None:
    """A JSONL record whose key is /etc/passwd is a record's key, not a file's: its text is shown
    only if it was kept, and the file is never opened."""
    records = tmp_path / "records.jsonl"
    records.write_text(
        '{"key": "/etc/passwd", "text": "one two three four five six"}\n'
        '{"key": "/etc/group", "text": "one two three four five seven"}\n'
    )
    assert simdb(capsys, "create", "recs")[0] == 0
    assert simdb(capsys, "ingest", "recs", str(records))[0] == 0
    page = client.get("/i/recs/compare", params={"a": "/etc/passwd", "b": "/etc/group"})
    assert page.status_code == 200 and "root:" not in page.text
    assert page.text.count("No text to show: its text was not kept") == 2


SECRET = "root:$6$not-for-the-page$:19000:0:99999:7:::"


def _secret_like(path: Path, target: Path) -> None:
    """A secret file at `target` with the size and modification time of the ingested file `path`."""
    size = path.stat().st_size
    target.write_text((SECRET + " " * size)[:size])
    os.utime(target, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))


def _unshown(page: str, reason: str) -> bool:
    return (
        SECRET[:20] not in page
        and page.count(
            f"No text to show: the file changed since it was ingested ({reason}); nothing of it is shown"
        )
        == 1
    )


@pytest.mark.parametrize("same_stat", [False, True])
def test_a_file_swapped_for_a_symlink_is_not_followed(
    corpus: dict[str, str], client: TestClient, tmp_path: Path, same_stat: bool
) -> None:
    a, b = _key(corpus, "alpha.txt"), _key(corpus, "alpha-draft.txt")
    secret = tmp_path / "shadow"
    if same_stat:
        _secret_like(Path(b), secret)
    else:
        secret.write_text(SECRET)
    Path(b).unlink()
    Path(b).symlink_to(secret)
    page = client.get("/i/docs/compare", params={"a": a, "b": b})
    assert page.status_code == 200 and _unshown(page.text, "a symbolic link is in its place")
    assert html.escape(corpus[a].split(" ")[30]) in page.text  # (the unchanged file is shown)
    side = client.post("/i/docs/compare", data={"text": corpus[a], "b": b}).text
    assert _unshown(side, "a symbolic link is in its place")
    assert "8 documents sampled" in client.get("/i/docs/pictures").text  # (of 9: the link is left out)


def test_a_folder_swapped_for_a_symlink_shows_nothing_of_the_other_file(
    corpus: dict[str, str], client: TestClient, tmp_path: Path
) -> None:
    """A parent folder replaced by a link to one with a file of the same name, size and time:
    the content read is checked against the index's sketch of what was ingested."""
    a, b = _key(corpus, "alpha.txt"), _key(corpus, "alpha-draft.txt")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for key in corpus:
        os.link(key, elsewhere / Path(key).name)
    (elsewhere / "alpha-draft.txt").unlink()
    _secret_like(Path(b), elsewhere / "alpha-draft.txt")
    (tmp_path / "docs").rename(tmp_path / "docs-old")
    (tmp_path / "docs").symlink_to(elsewhere)
    page = client.get("/i/docs/compare", params={"a": a, "b": b})
    assert page.status_code == 200 and _unshown(page.text, "its content is not what was indexed")
    assert html.escape(corpus[a].split(" ")[30]) in page.text


@pytest.mark.parametrize(
    "settings",
    [["--mode", "jaccard", "--threshold", "0.8"], ["--features", "bytes:4"]],
    ids=["jaccard", "bytes"],
)
def test_the_content_check_holds_in_every_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, client: TestClient, settings: list[str]
) -> None:
    """A file read again is shown when its content has the stored signature (jaccard) or bytes
    fingerprint, gzip or not, and not when a folder swap brings in another of the same size and time."""
    import gzip

    keys = write_folder(tmp_path / "docs")
    a, b = _key(keys, "alpha.txt"), _key(keys, "beta.txt")
    Path(b + ".gz").write_bytes(gzip.compress(keys[b].encode(), mtime=0))
    assert simdb(capsys, "create", "files", *settings)[0] == 0
    assert simdb(capsys, "ingest", "files", str(tmp_path / "docs"))[0] == 0
    page = client.get("/i/files/compare", params={"a": a, "b": b}).text
    assert page.count("from file") == 2 and "No text to show" not in page
    zipped = client.get("/i/files/compare", params={"a": a, "b": b + ".gz"}).text
    assert zipped.count("from file") == 2 and "No text to show" not in zipped
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.link(a, elsewhere / "alpha.txt")
    _secret_like(Path(b), elsewhere / "beta.txt")
    (tmp_path / "docs").rename(tmp_path / "docs-old")
    (tmp_path / "docs").symlink_to(elsewhere)
    page = client.get("/i/files/compare", params={"a": a, "b": b}).text
    assert _unshown(page, "its content is not what was indexed") and page.count("from file") == 2


def test_a_file_changed_since_ingest_is_not_shown(corpus: dict[str, str], client: TestClient) -> None:
    a, b = _key(corpus, "alpha.txt"), _key(corpus, "alpha-draft.txt")
    Path(b).write_text(SECRET + " " + corpus[b])
    page = client.get("/i/docs/compare", params={"a": a, "b": b}).text
    assert _unshown(page, "its size or modification time differ") and "this is its text now" not in page
    Path(b).unlink()
    os.mkfifo(b)
    page = client.get("/i/docs/compare", params={"a": a, "b": b}).text
    assert _unshown(page, "it is not a regular file now")


def test_kept_texts_are_compressed_shown_and_follow_the_rows(
    capsys: pytest.CaptureFixture[str], conn: Conn, dsn: str, tmp_path: Path, client: TestClient
) -> None:
    records = write_records(tmp_path / "records.jsonl")
    assert simdb(capsys, "create", "recs", "--max-distance", "6")[0] == 0
    assert simdb(capsys, "ingest", "recs", str(tmp_path / "records.jsonl"), "--keep-text")[0] == 0
    made = index.get(conn, "recs")
    kept = dict(
        conn.execute(sql.SQL("SELECT key, body FROM {}").format(names.texts_table("recs"))).fetchall()
    )
    assert {key: zlib.decompress(body).decode() for key, body in kept.items()} == records  # type: ignore[arg-type]
    usage = texts.usage(conn, made)
    assert usage.rows == 9 and usage.text_bytes == sum(len(text.encode()) for text in records.values())
    page = client.get("/i/recs/compare", params={"a": "rec-script", "b": "rec-script-copy"}).text
    assert "from kept text" in page and '<mark class="ins">narwhal</mark>' in page
    # a later ingest without the flag keeps texts too (the index keeps them); delete forgets them
    (tmp_path / "more.jsonl").write_text('{"key": "rec-alpha", "text": "a new text for alpha here"}\n')
    assert simdb(capsys, "ingest", "recs", str(tmp_path / "more.jsonl"))[0] == 0
    assert texts.read(conn, made, "rec-alpha", 1000).text == "a new text for alpha here"
    assert simdb(capsys, "delete", "recs", "rec-alpha")[0] == 0
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(names.texts_table("recs"))).fetchone() == (
        8,
    )
    assert simdb(capsys, "drop", "recs", "--yes")[0] == 0
    assert conn.execute("SELECT to_regclass('simdb.recs__texts')").fetchone() == (None,)


def test_an_index_without_kept_texts_still_shows_keys_and_scores(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path, client: TestClient
) -> None:
    write_records(tmp_path / "records.jsonl")
    assert simdb(capsys, "create", "recs", "--max-distance", "6")[0] == 0
    assert simdb(capsys, "ingest", "recs", str(tmp_path / "records.jsonl"))[0] == 0
    listed = _listed(client.get("/i/recs/clusters").text)
    assert [len(cluster) for cluster in listed] == [3, 2, 2]
    page = client.get("/i/recs/compare", params={"a": "rec-beta", "b": "rec-beta-edit"}).text
    assert page.count("No text to show") == 2 and '<b id="score">' in page and '<b id="jaccard">–</b>' in page
    pictures = client.get("/i/recs/pictures").text
    assert 'id="no-calibration"' in pictures and "can be reached" in pictures


def test_an_attached_index_shows_the_application_column(
    capsys: pytest.CaptureFixture[str], conn: Conn, corpus: dict[str, str], client: TestClient
) -> None:
    conn.execute("CREATE TABLE articles (id int PRIMARY KEY, body text)")
    texts_by_name = {key.rsplit("/", 1)[1]: text for key, text in corpus.items()}
    conn.execute(
        "INSERT INTO articles VALUES (1, %s), (2, %s)",
        (texts_by_name["beta.txt"], texts_by_name["beta-edit.txt"]),
    )
    code, _, err = simdb(
        capsys, "attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body"
    )
    assert code == 0, err
    page = client.get("/i/arts/compare", params={"a": "1", "b": "2"}).text
    assert "from column public.articles.body" in page and '<mark class="ins">walrus</mark>' in page
    home = client.get("/").text
    assert "follows public.articles.body" in home and "from public.articles.body" in home


def test_search_finds_a_pasted_copy_and_an_uploaded_file(corpus: dict[str, str], client: TestClient) -> None:
    copy = corpus[_key(corpus, "beta.txt")].replace("river", "rivers", 1)
    found = client.post("/i/docs/search", data={"text": copy}).text
    keys = [
        html.unescape(key) for key in re.findall(r'<tr class="match">\s*<td class="key">(.*?)</td>', found)
    ]
    assert sorted(keys) == sorted([_key(corpus, "beta.txt"), _key(corpus, "beta-edit.txt")])
    uploaded = client.post("/i/docs/search", files={"file": ("x.txt", copy.encode(), "text/plain")}).text
    assert re.findall(r'<td class="key">(.*?)</td>', uploaded) == re.findall(
        r'<td class="key">(.*?)</td>', found
    )
    side = client.post("/i/docs/compare", data={"text": copy, "b": _key(corpus, "beta.txt")}).text
    assert "your text" in side and re.findall(r'<mark class="del">(.*?)</mark>', side) == ["rivers"]
    empty = client.post("/i/docs/search", data={"text": "   "})
    assert empty.status_code == 400 and "no text given" in empty.text


def test_an_upload_over_the_limit_is_refused_not_cut(corpus: dict[str, str], client: TestClient) -> None:
    body = b"markers " * (9 << 17)  # 9 MiB (the limit is 8 MiB)
    answer = client.post("/i/docs/search", files={"file": ("big.txt", body, "text/plain")})
    assert answer.status_code == 413 and "marker" not in answer.text
    assert re.findall(r'<p id="message">(.*?)</p>', answer.text) == [
        "the file &#39;big.txt&#39; is larger than 8 MiB, the most a search here reads"
    ]
    assert (
        "search with a part of it pasted, or on the command line: simdb query docs --file FILE"
        " (any size)" in answer.text
    )


def test_a_pasted_text_up_to_the_limit_is_searched_and_compared(
    corpus: dict[str, str], client: TestClient
) -> None:
    """A text field is read up to the upload's limit (8 MiB), not the form parser's default 1 MiB,
    so that a side by side of a long text works; a larger one gets the same 413 page."""
    beta = _key(corpus, "beta.txt")
    long = corpus[beta] + " more" * (300 << 10)  # 1.5 MiB
    found = client.post("/i/docs/search", data={"text": long}, files={"file": ("", b"")})
    assert found.status_code == 200 and "near-duplicate" in found.text
    side = client.post("/i/docs/compare", data={"text": long, "b": beta})
    assert side.status_code == 200 and "Long document: shown and compared up to its first 100000" in side.text
    huge = "markers " * (9 << 17)  # 9 MiB
    for answer in (
        client.post("/i/docs/search", data={"text": huge}, files={"file": ("", b"")}),
        client.post("/i/docs/compare", data={"text": huge, "b": beta}),
    ):
        assert answer.status_code == 413 and "markers" not in answer.text
        assert re.findall(r'<p id="message">(.*?)</p>', answer.text) == [
            "the text given is larger than 8 MiB, the most a search here reads"
        ]


def test_pictures_draw_the_pairs_and_the_calibration(
    conn: Conn, corpus: dict[str, str], client: TestClient
) -> None:
    page = client.get("/i/docs/pictures").text
    bars = {
        int(value): int(count)
        for value, count in re.findall(r'class="bar" data-value="(\d+)" data-count="(\d+)"', page)
    }
    found = [pair.distance for pair in duplicates.pairs(conn, index.get(conn, "docs"))]
    assert bars == {distance: found.count(distance) for distance in set(found)} and sum(bars.values()) == 4
    assert len(re.findall(r'<circle class="point (precision|recall)"', page)) == 2 * 3 * 9
    assert "9 documents sampled" in page
    assert client.get("/i/docs/pictures", params={"sample": "x"}).status_code == 400


def test_pictures_say_there_is_nothing_to_calibrate_on(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path, client: TestClient
) -> None:
    folder = tmp_path / "apart"
    folder.mkdir()
    (folder / "a.txt").write_text("one two three four five six")
    (folder / "b.txt").write_text("seven eight nine ten eleven twelve")
    assert simdb(capsys, "create", "apart")[0] == 0
    assert simdb(capsys, "ingest", "apart", str(folder))[0] == 0
    page = client.get("/i/apart/pictures").text
    assert 'id="no-calibration"' in page and '<circle class="point' not in page
    assert "no pair of the 2 documents sampled has Jaccard &gt;= 0.8: nothing to calibrate on" in page


def test_the_indexes_page_and_errors(corpus: dict[str, str], client: TestClient) -> None:
    home = client.get("/").text
    assert re.search(r'<a href="/i/docs/clusters">docs</a>', home) and "max distance 6" in home
    assert client.get("/i/nope/clusters").status_code == 404
    assert client.get("/i/docs/clusters", params={"keep": "random"}).status_code == 400
    assert client.get("/i/docs/clusters", params={"page": "0"}).status_code == 400
    assert client.get("/i/docs/clusters", params={"page": "2"}).status_code == 400  # (3 clusters: 1 page)
    assert client.get("/i/docs/compare", params={"a": _key(corpus, "alpha.txt")}).status_code == 400


def test_long_documents_are_cut_with_a_note(
    capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path, client: TestClient
) -> None:
    folder = tmp_path / "long"
    folder.mkdir()
    body = " ".join(f"word{n % 997}x{n // 997}" for n in range(40_000))  # ~400k characters
    (folder / "a.txt").write_text(body)
    (folder / "b.txt").write_text(body + " tail")
    assert simdb(capsys, "create", "long")[0] == 0
    assert simdb(capsys, "ingest", "long", str(folder))[0] == 0
    page = client.get("/i/long/compare", params={"a": str(folder / "a.txt"), "b": str(folder / "b.txt")}).text
    assert page.count("Long document: shown and compared up to its first 100000 characters") == 2


def test_a_token_is_required_beyond_the_loopback(corpus: dict[str, str], dsn: str) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert token_for("127.0.0.1", None) is None and token_for("127.0.0.1", "t") == "t"
    made = token_for("0.0.0.0", None)
    assert made is not None and len(made) >= 32 and token_for("0.0.0.0", None) != made
    with TestClient(create_app(dsn, token=made), base_url="http://192.168.1.5:8765") as remote:
        assert remote.get("/").status_code == 401
        assert remote.get("/", params={"token": "wrong"}).status_code == 401
        assert remote.get("/", params={"token": f"{made}é"}).status_code == 401
        assert remote.get("/", headers={"authorization": f"Bearer {made}"}).status_code == 200
        opened = remote.get("/", params={"token": made})
        assert opened.status_code == 200 and "HttpOnly" in opened.headers["set-cookie"]
        assert remote.get("/i/docs/clusters").status_code == 200  # (the cookie it set)
    with TestClient(create_app(dsn), base_url="http://rebound.example:8765") as elsewhere:
        assert elsewhere.get("/").status_code == 403  # (no token: only requests to the loopback names)


def test_a_reader_role_sees_everything_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], conn: Conn, dsn: str, corpus: dict[str, str]
) -> None:
    reader = f"simdb_serve_reader_{id(conn) % 100000}"
    conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(reader)))
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(reader)))
    conn.execute("CREATE TABLE articles (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO articles VALUES (1, 'one two three four five'), (2, 'one two three four six')")
    try:
        attached = ("attach", "arts", "--table", "articles", "--key-column", "id", "--text-column", "body")
        assert simdb(capsys, *attached)[0] == 0
        assert simdb(capsys, "grant", "docs", "--reader", reader)[0] == 0
        assert simdb(capsys, "grant", "arts", "--reader", reader)[0] == 0  # (not the table articles)
        as_reader = psycopg.conninfo.make_conninfo(dsn, user=reader)
        with TestClient(create_app(as_reader), base_url=LOCAL) as session:
            assert [len(c) for c in _listed(session.get("/i/docs/clusters").text)] == [3, 2, 2]
            exported = session.get("/i/docs/clusters.csv", params={"keep": "first"}).text
            assert exported == simdb(capsys, "dedup", "docs", "--keep", "first")[1]  # (as the owner)
            a, b = _key(corpus, "beta.txt"), _key(corpus, "beta-edit.txt")
            assert session.get("/i/docs/compare", params={"a": a, "b": b}).status_code == 200
            assert session.get("/i/docs/pictures").status_code == 200
            shown = session.get("/i/arts/compare", params={"a": "1", "b": "2"})
            assert (
                shown.status_code == 200
                and shown.text.count("this role may not read public.articles.body") == 2
            )
    finally:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(reader)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(reader)))


def test_the_pages_only_read(conn: Conn, corpus: dict[str, str], client: TestClient) -> None:
    conn.execute("DROP TABLE IF EXISTS simdb.docs__clusters")
    for path in ("/i/docs/clusters", "/i/docs/clusters.csv", "/i/docs/pictures"):
        assert client.get(path).status_code == 200
    assert conn.execute("SELECT to_regclass('simdb.docs__clusters')").fetchone() == (None,)
    sessions = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'simdb serve' AND datname = current_database()"
    ).fetchone()
    assert sessions is not None and sessions[0] >= 1
    with psycopg.connect(conn.info.dsn, autocommit=True) as other:
        other.execute("SET application_name = 'simdb serve'")  # (as the pool's sessions are set up)
        other.execute("SET default_transaction_read_only = on")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            other.execute("CREATE TABLE simdb.x (a int)")


def test_one_slow_request_does_not_hold_up_the_others(
    capsys: pytest.CaptureFixture[str], conn: Conn, dsn: str, corpus: dict[str, str], tmp_path: Path
) -> None:
    """A request waiting on a lock (a slow one) keeps its connection and thread; another index's
    page is answered meanwhile, and the first is answered once the lock goes."""
    write_records(tmp_path / "records.jsonl")
    assert simdb(capsys, "create", "recs", "--max-distance", "6")[0] == 0
    assert simdb(capsys, "ingest", "recs", str(tmp_path / "records.jsonl"))[0] == 0
    with TestClient(create_app(dsn), base_url=LOCAL) as session, psycopg.connect(dsn) as locker:
        locker.execute("LOCK TABLE simdb.docs IN ACCESS EXCLUSIVE MODE")  # (held until rollback)
        answers: dict[str, int] = {}
        slow = threading.Thread(
            target=lambda: answers.update(slow=session.get("/i/docs/clusters").status_code), daemon=True
        )
        slow.start()
        waiting = None
        while not waiting:  # until the slow request waits for the lock
            waiting = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'simdb serve'"
                " AND wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchall()
            slow.join(0.02)
        assert session.get("/i/recs/clusters").status_code == 200
        assert slow.is_alive() and "slow" not in answers
        locker.rollback()
        slow.join()
    assert answers == {"slow": 200}


def test_simdb_serve_prints_its_url_and_serves(dsn: str, corpus: dict[str, str]) -> None:
    """The command itself: the URL with its token on stderr, then pages for that token only."""
    port = free_port()
    command = [sys.executable, "-c", "from simdb.cli import run; run()", "serve", "--port", str(port)]
    environment = {**os.environ, "SIMDB_DSN": dsn, "SIMDB_SERVE_TOKEN": "s3cret-token"}
    server = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        url = f"http://127.0.0.1:{port}/?token=s3cret-token"
        assert server.stderr.readline() == f"simdb serve: open {url} (Ctrl-C stops it)\n"
        for _ in range(1000):  # (until it listens: uvicorn starts after the line)
            try:
                refused = httpx.get(f"http://127.0.0.1:{port}/i/docs/clusters")
                break
            except httpx.ConnectError:
                assert server.poll() is None, server.stderr.read()
                time.sleep(0.05)
        else:
            pytest.fail("simdb serve did not answer")
        assert refused.status_code == 401
        opened = httpx.get(f"http://127.0.0.1:{port}/i/docs/clusters", params={"token": "s3cret-token"})
        assert opened.status_code == 200 and opened.text.count('class="card cluster"') == 3
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()


def test_a_jaccard_index_shows_estimated_jaccard(
    capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path, client: TestClient
) -> None:
    records = write_records(tmp_path / "records.jsonl")
    assert simdb(capsys, "create", "near", "--mode", "jaccard", "--threshold", "0.8")[0] == 0
    assert simdb(capsys, "ingest", "near", str(tmp_path / "records.jsonl"), "--keep-text")[0] == 0
    made = index.get(conn, "near")
    found = list(duplicates.pairs(conn, made))
    page = client.get("/i/near/clusters").text
    assert "similarity to kept" in page and len(_listed(page)) == len(duplicates.groups(conn, made)[0]) >= 2
    assert client.get("/i/near/clusters.csv").text == simdb(capsys, "dedup", "near", "--keep", "first")[1]
    side = client.get("/i/near/compare", params={"a": "rec-beta", "b": "rec-beta-edit"}).text
    estimate = made.compared(
        query.stored(conn, made, "rec-beta").sketch, query.stored(conn, made, "rec-beta-edit").sketch
    )  # type: ignore[union-attr]
    assert f'<b id="score">{estimate[0]:.3f}</b>' in side and "estimated Jaccard" in side
    exact = compare.shingle_jaccard(records["rec-beta"], records["rec-beta-edit"], made.features)
    assert f'<b id="jaccard">{exact:.3f}</b>' in side
    pictures = client.get("/i/near/pictures").text
    bars = dict(re.findall(r'class="bar" data-value="([0-9.]+)" data-count="(\d+)"', pictures))
    rounded = [f"{round(pair.similarity, 2):.2f}" for pair in found if pair.similarity is not None]
    assert bars == {value: str(rounded.count(value)) for value in set(rounded)}


def test_a_writer_keeps_texts_and_a_reader_reads_them(
    capsys: pytest.CaptureFixture[str], conn: Conn, dsn: str, tmp_path: Path
) -> None:
    write_records(tmp_path / "records.jsonl")
    assert simdb(capsys, "create", "recs")[0] == 0
    assert simdb(capsys, "ingest", "recs", str(tmp_path / "records.jsonl"), "--keep-text")[0] == 0
    writer, reader = (f"simdb_serve_{role}_{id(conn) % 100000}" for role in ("writer", "reader"))
    for role in (writer, reader):
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))
    (tmp_path / "more.jsonl").write_text(
        '{"key": "rec-gamma", "text": "gamma is written again by the writer"}\n'
    )
    try:
        assert simdb(capsys, "grant", "recs", "--writer", writer, "--reader", reader)[0] == 0
        with psycopg.connect(dsn, autocommit=True) as session:
            session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(writer)))
            made = index.get(session, "recs")
            assert ingest.ingest(session, made, readers.read([str(tmp_path / "more.jsonl")])).updated == 1
            session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(reader)))
            assert texts.read(session, made, "rec-gamma", 100).text == "gamma is written again by the writer"
    finally:
        for role in (writer, reader):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
