"""Memory bounded by bytes: batches hold at most --batch-bytes, a large
document is sketched a piece at a time with the same fingerprint or signature as the whole one
(spec v2 holds at most DISTINCT_LIMIT distinct shingles at once), and a file larger than the
batch budget is never read whole."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql
from support import Conn, simdb
from support.reference import (
    reference_bytes_fingerprint,
    reference_check,
    reference_fingerprint,
    reference_minhash,
)

from simdb import ingest
from simdb.index import lifecycle as index
from simdb.index.modes import Index
from simdb.index.modes.jaccard import JaccardSpec
from simdb.index.modes.simhash import SimhashSpec
from simdb.sketch import features, minhash, simhash
from simdb.sketch.features import Features
from simdb.sources import readers


class Pieces:
    """A document given in pieces (what readers.FileStream gives for a large file)."""

    def __init__(self, parts: list[str] | list[bytes]) -> None:
        self.parts = parts
        self.calls = 0

    def pieces(self) -> Iterator[str | bytes]:
        self.calls += 1
        yield from self.parts


def _cut(content: str | bytes, cuts: list[int]) -> list[str] | list[bytes]:
    """`content` cut at these places (any, between characters)."""
    at = sorted({cut % (len(content) + 1) for cut in cuts} | {0, len(content)})
    return [content[start:end] for start, end in itertools.pairwise(at)]  # type: ignore[return-value]


class Tiny:
    """features.PIECE and simhash.DISTINCT_LIMIT made tiny within a `with`: every path of the
    bounded computation runs on small documents (hypothesis cannot take pytest's monkeypatch)."""

    def __init__(self, piece: int, limit: int) -> None:
        self.values = [(features, "PIECE", piece), (simhash, "DISTINCT_LIMIT", limit)]

    def __enter__(self) -> None:
        self.saved = [(module, name, getattr(module, name)) for module, name, _ in self.values]
        for module, name, value in self.values:
            setattr(module, name, value)

    def __exit__(self, *_: object) -> None:
        for module, name, value in self.saved:
            setattr(module, name, value)


# --- item 7: a document a piece at a time -------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**64 - 1), max_size=400),
    st.integers(0, 3),
    st.integers(1, 40),
    st.integers(1, 60),
    st.integers(0, 63),
)
def test_distinct_ranges_hold_at_most_the_limit_and_give_every_value_once(
    values: list[int], repeat: int, limit: int, piece: int, shift: int
) -> None:
    array = np.array(values * (repeat + 1), dtype=np.uint64) >> np.uint64(shift)  # also not uniform
    pieces = [array[at : at + piece] for at in range(0, len(array), piece)]
    ranges = [part.copy() for part in simhash.distinct_ranges(lambda: pieces, limit)]
    assert all(len(part) <= limit for part in ranges)
    found = np.concatenate(ranges).tolist() if ranges else []
    assert sorted(found) == sorted(set(array.tolist()))  # each distinct value, each once


def test_a_document_of_many_distinct_shingles_takes_several_passes_and_the_same_fingerprint() -> None:
    data = np.random.default_rng(27).integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    stream = Pieces([data[at : at + 999] for at in range(0, len(data), 999)])
    expected = [simhash.fingerprint_bytes(data, 4, 2, bits) for bits in (64, 128)]
    with Tiny(piece=500, limit=1000):
        assert [simhash.fingerprint(stream, Features("bytes", 4), 2, bits) for bits in (64, 128)] == expected
        passes = stream.calls
        pieces = list(features.document_shingles(stream, Features("bytes", 4))())
    assert passes >= 2 * 19_997 // 1000  # about 20,000 distinct 4-grams, at most 1,000 at a time
    assert max(map(len, pieces)) <= 500 and sum(map(len, pieces)) == 19_997
    assert expected[0] == reference_bytes_fingerprint(data, 4, 2)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab cd EF é ß ﬁ 1 _ .\n\t<\u0338e\u0301日本"), max_size=300),
    st.lists(st.integers(0, 10**6), max_size=8),
    st.sampled_from(["word", "char"]),
    st.integers(1, 4),
    st.sampled_from([1, 2]),
    st.sampled_from([64, 128]),
    st.integers(1, 40),
    st.integers(1, 30),
)
def test_text_in_pieces_fingerprints_as_the_whole_text(
    text: str, cuts: list[int], kind: str, n: int, spec: int, bits: int, piece: int, limit: int
) -> None:
    features = Features(kind, n)
    expected = reference_fingerprint(text, kind, n, spec, bits)
    assert simhash.fingerprints([text], features, spec, bits) == [expected]  # the kernels, whole
    with Tiny(piece, limit):  # long texts (past PIECE) and streams go a piece at a time
        assert simhash.fingerprints([text, Pieces(_cut(text, cuts))], features, spec, bits) == [expected] * 2


@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=300),
    st.lists(st.integers(0, 10**6), max_size=8),
    st.integers(1, 6),
    st.sampled_from([1, 2]),
    st.sampled_from([64, 128]),
    st.integers(1, 40),
    st.integers(1, 30),
)
def test_bytes_in_pieces_fingerprint_as_the_whole_content(
    data: bytes, cuts: list[int], n: int, spec: int, bits: int, piece: int, limit: int
) -> None:
    features = Features("bytes", n)
    expected = reference_bytes_fingerprint(data, n, spec, bits)
    with Tiny(piece, limit):
        assert simhash.fingerprints([data, Pieces(_cut(data, cuts))], features, spec, bits) == [expected] * 2


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=st.sampled_from("ab cd EF é ß 1 _ .\n日"), max_size=300),
        st.binary(max_size=300),
    ),
    st.lists(st.integers(0, 10**6), max_size=8),
    st.integers(1, 4),
    st.sampled_from([1, 2]),
    st.integers(1, 40),
)
def test_signatures_in_pieces_equal_those_of_the_whole_set(
    content: str | bytes, cuts: list[int], n: int, spec: int, piece: int
) -> None:
    """A signature value is the least over the set, and so is each bin of the check: taken
    piece by piece, they are the whole set's, exactly (signature specs unchanged)."""
    kind = Features("bytes" if isinstance(content, bytes) else "word", n)
    try:
        shingles = set(features.feature_hashes(content, kind).tolist())
    except features.EmptyDocument:
        shingles = set()
    expected = None
    if shingles:
        expected = reference_minhash(shingles, 16) + (reference_check(shingles) if spec == 2 else [])
    whole = minhash.document_signatures([content], kind, 16, spec)[0]
    with Tiny(piece, 1):
        parts = minhash.document_signatures([content, Pieces(_cut(content, cuts))], kind, 16, spec)
    for found in [whole, *parts]:
        assert (found is None and expected is None) or (found is not None and found.tolist() == expected)


# --- item 7: a large file is not read whole ------------------------------------------------------


def test_a_file_larger_than_stream_over_is_read_when_sketched_not_before(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "big.txt").write_bytes("Größe und Länge ".encode() * 100 + b"\xff tail")
    (folder / "small.txt").write_text("a small one")
    (folder / "big.bin").write_bytes(b"\0" * 3000)
    items = list(readers.read([str(folder)], readers.Options(stream_over=100)))
    binary, big, small = items
    assert isinstance(binary, readers.Skip) and binary.reason == "binary" and binary.consumed == 3000
    assert isinstance(big, readers.Document) and isinstance(small, readers.Document)
    assert big.stream is not None and big.text == "" and big.data is None and big.content is big.stream
    size = (folder / "big.txt").stat().st_size
    assert big.size == big.consumed == size and ingest.held_bytes(big) == size
    assert small.stream is None and small.text == "a small one"
    text, repaired = readers.decode((folder / "big.txt").read_bytes())
    assert "".join(map(str, big.stream.pieces())) == text and repaired and big.stream.repaired
    assert simhash.fingerprint(big.content) == simhash.fingerprint(text)
    (raw_big,) = [
        item
        for item in readers.read([str(folder)], readers.Options(raw=True, stream_over=100))
        if isinstance(item, readers.Document) and item.key.endswith("big.bin")
    ]
    assert (
        raw_big.stream is not None
        and b"".join(p for p in raw_big.stream.pieces() if isinstance(p, bytes)) == b"\0" * 3000
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [b"a", b" ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xe2\x82", b"\x80", b"\xff"]
        ),
        max_size=60,
    ),
    st.integers(1, 7),
)
def test_a_file_read_in_pieces_decodes_as_the_whole_file(parts: list[bytes], block: int) -> None:
    data = b"".join(parts)
    saved = readers._STREAM_PIECE
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "doc.txt"
        path.write_bytes(data)
        readers._STREAM_PIECE = block  # characters and invalid sequences cut anywhere
        try:
            stream = readers.FileStream(str(path), len(data), raw=False)
            text = "".join(map(str, stream.pieces()))
        finally:
            readers._STREAM_PIECE = saved
    assert (text, stream.repaired) == readers.decode(data)


# --- item 6: batches bounded by bytes ------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 120), max_size=40), st.integers(1, 8), st.integers(1, 300))
def test_batches_never_exceed_the_byte_budget(sizes: list[int], size: int, max_bytes: int) -> None:
    documents = [readers.Document(f"d{at}", "x" * length, length) for at, length in enumerate(sizes)]
    items: list[readers.Item] = [
        item for document in documents for item in (document, readers.Skip("s", "empty"))
    ]
    report = ingest.Report()
    batches = list(ingest._batches(items, size, max_bytes, report, None, lambda keys: None))
    assert [document for batch in batches for document in batch] == documents  # all, in order
    for batch in batches:
        held = sum(map(ingest.held_bytes, batch))
        assert len(batch) <= size and (held <= max_bytes or len(batch) == 1)  # a larger one alone
    for batch, after in itertools.pairwise(batches):  # none closed early
        assert len(batch) == size or sum(map(ingest.held_bytes, [*batch, after[0]])) > max_bytes
    assert report.skipped["empty"] == len(sizes)


def test_ingest_stores_batches_of_the_byte_budget(
    conn: Conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(5):
        (folder / f"d{number}.txt").write_text(f"document {number} " + "word " * 198)  # 1,001 bytes
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    stored: list[int] = []  # the rows of each store_rows(), one transaction per batch
    store_rows = ingest.store_rows

    def counted(conn: Conn, index: Index, rows: list[ingest.Row], **kw: bool) -> tuple[int, int]:
        stored.append(len(rows))
        return store_rows(conn, index, rows, **kw)

    monkeypatch.setattr(ingest, "store_rows", counted)
    items = readers.read([str(folder)], readers.Options())
    report = ingest.ingest(conn, made, items, batch_bytes=2500, jobs=2)
    assert report.inserted == 5 and stored == [2, 2, 1]


@pytest.mark.parametrize("spec", [SimhashSpec(max_distance=3), JaccardSpec(permutations=32)])
def test_a_file_larger_than_the_budget_is_stored_with_the_whole_files_sketch(
    conn: Conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: SimhashSpec | JaccardSpec
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    rng = np.random.default_rng(6)
    contents = {
        f"f{number}.bin": rng.integers(0, 256, 300 + 2000 * number, dtype=np.uint8).tobytes()
        for number in range(3)
    }
    for name, data in contents.items():
        (folder / name).write_bytes(data)
    made = index.create(conn, "files", spec, features=Features("bytes", 4))
    expected = {name: made.sketch(data) for name, data in contents.items()}  # whole, in memory
    monkeypatch.setattr(features, "PIECE", 256)
    monkeypatch.setattr(simhash, "DISTINCT_LIMIT", 300)
    items = readers.read([str(folder)], readers.Options(raw=True, root=str(folder), stream_over=1000))
    report = ingest.ingest(conn, made, items, batch_bytes=1000)
    assert report.inserted == 3
    rows = conn.execute(
        sql.SQL("SELECT key, {} FROM {}").format(sql.Identifier(made.sketch_column), made.table)
    )
    stored = {key: made.from_sql(value) for key, value in rows}
    assert {key: np.asarray(value).tolist() for key, value in stored.items()} == {
        key: np.asarray(value).tolist() for key, value in expected.items()
    }


def test_a_streamed_text_file_counts_as_repaired(conn: Conn, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"caf\xe9 au lait " * 200)
    made = index.create(conn, "docs", SimhashSpec(max_distance=3))
    items = readers.read([str(tmp_path / "big.txt")], readers.Options(stream_over=100))
    report = ingest.ingest(conn, made, items, batch_bytes=100)
    assert (report.inserted, report.repaired) == (1, 1)


def test_ingest_batch_bytes_option(capsys: pytest.CaptureFixture[str], dsn: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha beta gamma " * 100)
    (tmp_path / "b.txt").write_text("delta epsilon zeta " * 100)
    assert simdb(capsys, "create", "docs")[0] == 0
    code, out, _ = simdb(capsys, "ingest", "docs", str(tmp_path), "--batch-bytes", "1K")
    assert code == 0 and out.startswith("ingested 2 documents: 2 new")
    code, _, err = simdb(capsys, "ingest", "docs", str(tmp_path), "--batch-bytes", "0")
    assert (
        code == 2
        and (
            "Invalid value for '--batch-bytes': '0' is not a size: give bytes, or a number and K, M or G, e.g. 64M"
        )
        in err
    )
