"""`simdb load`: fingerprints computed elsewhere (numpy, raw, JSONL, CSV) copied into a new index,
its B-trees built after; an interrupted load resumes on the same file and only on it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql
from support import Conn, simdb

from simdb import load, query
from simdb.errors import InputError, InvalidParameter
from simdb.index import catalog
from simdb.index import lifecycle as index
from simdb.index.modes import Index
from simdb.index.modes.jaccard import JaccardSpec
from simdb.index.modes.simhash import SimhashSpec
from simdb.sketch.bits import to_signed
from simdb.sketch.features import DEFAULT_FEATURES
from simdb.sources.fingerprints import Fields, FingerprintFile

ROWS = 2_500


def _values(rows: int = ROWS, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=rows, dtype=np.uint64)


def _new(conn: Conn, name: str = "fp") -> Index:
    return index.save(conn, SimhashSpec(3).build(name, DEFAULT_FEATURES, ROWS))


def _stored(conn: Conn, target: Index) -> dict[str, int]:
    rows = conn.execute(sql.SQL("SELECT key, fingerprint FROM {}").format(target.table)).fetchall()
    return {str(key): int(value) for key, value in rows}


def _expected(values: np.ndarray, keys: list[str]) -> dict[str, int]:
    return {key: to_signed(int(value)) for key, value in zip(keys, values.tolist(), strict=True)}


def _btrees(conn: Conn, target: Index) -> list[str]:
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'simdb' AND tablename = %s ORDER BY 1",
        (target.name,),
    ).fetchall()
    return [str(row[0]) for row in rows]


def _jsonl(path: Path, values: np.ndarray) -> list[str]:
    keys = [f"doc-{i}" for i in range(len(values))]
    with path.open("w") as out:
        for i, (key, value) in enumerate(zip(keys, values.tolist(), strict=True)):
            given: object = f"{value:016x}" if i % 3 else to_signed(value)  # hex digits, or an integer
            out.write(json.dumps({"key": key, "fingerprint": given}) + "\n")
            if i == 7:
                out.write("\n")  # a blank line is passed over
    return keys


def test_a_numpy_file_loads_with_its_btrees_and_answers_queries(conn: Conn, tmp_path: Path) -> None:
    values = _values()
    np.save(tmp_path / "fp.npy", values)
    target = _new(conn)
    before = _btrees(conn, target)
    with FingerprintFile(str(tmp_path / "fp.npy"), "npy", key_prefix="r") as source:
        report = load.load(conn, target, source, chunk_rows=1000)
    assert (report.rows, report.resumed_at) == (ROWS, 0)
    assert _stored(conn, target) == _expected(values, [f"r{i}" for i in range(ROWS)])
    assert _btrees(conn, target) == before  # the primary key and every B-tree, built again
    assert catalog.load_mark(conn, "fp") is None
    near = query.near(conn, target, int(values[17]) ^ 0b101, 3)
    assert [(hit.key, hit.distance) for hit in near][:1] == [("r17", 2)]


def test_raw_jsonl_and_csv_files_load_the_same_rows(conn: Conn, tmp_path: Path) -> None:
    values = _values()
    values.astype("<u8").tofile(tmp_path / "fp.u64")
    keys = _jsonl(tmp_path / "fp.jsonl", values)
    with (tmp_path / "fp.csv").open("w") as out:
        out.write(
            "id;fp\n"
            + "".join(f"{key};{value:x}\n" for key, value in zip(keys, values.tolist(), strict=True))
        )
    raw, jsonl, csv_ = _new(conn, "raw"), _new(conn, "jsonl"), _new(conn, "csv")
    with FingerprintFile(str(tmp_path / "fp.u64"), "u64") as source:
        load.load(conn, raw, source, chunk_rows=999)
    with FingerprintFile(str(tmp_path / "fp.jsonl"), "jsonl", Fields(jsonl.parse_given)) as source:
        load.load(conn, jsonl, source, chunk_rows=999)
    fields = Fields(csv_.parse_given, key="id", fingerprint="fp", delimiter=";")
    with FingerprintFile(str(tmp_path / "fp.csv"), "csv", fields) as source:
        load.load(conn, csv_, source, chunk_rows=999)
    assert _stored(conn, raw) == _expected(values, [str(i) for i in range(ROWS)])
    assert _stored(conn, jsonl) == _stored(conn, csv_) == _expected(values, keys)


def test_an_interrupted_load_resumes_after_its_last_chunk(conn: Conn, tmp_path: Path) -> None:
    values = _values()
    keys = _jsonl(tmp_path / "fp.jsonl", values)
    target = _new(conn)
    chunks = []

    def interrupt(done: int) -> None:
        chunks.append(done)
        if len(chunks) == 3:  # the first chunk and the second are in; the third is being read
            raise KeyboardInterrupt

    with (
        FingerprintFile(str(tmp_path / "fp.jsonl"), "jsonl", Fields(target.parse_given)) as source,
        pytest.raises(KeyboardInterrupt),
    ):
        load.load(conn, target, source, chunk_rows=1000, progress=interrupt)
    mark = catalog.load_mark(conn, "fp")
    assert mark is not None and mark.rows == 2000 and len(_stored(conn, target)) == 2000
    assert _btrees(conn, target) == []  # queries scan meanwhile, and stay exact
    assert {hit.key for hit in query.near(conn, target, int(values[5]), 0)} == {keys[5]}

    with FingerprintFile(str(tmp_path / "fp.jsonl"), "jsonl", Fields(target.parse_given)) as source:
        report = load.load(conn, target, source, chunk_rows=1000)
    assert (report.rows, report.resumed_at) == (ROWS, 2000)
    assert _stored(conn, target) == _expected(values, keys)
    assert catalog.load_mark(conn, "fp") is None


def test_a_resumed_load_reads_only_the_same_file(
    conn: Conn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A changed file, or a symlink swapped in at the path, is refused; --restart loads it anew."""
    values = _values()
    path = tmp_path / "fp.npy"
    np.save(path, values)
    target = _new(conn)

    def stop(done: int) -> None:
        if done:
            raise KeyboardInterrupt

    with FingerprintFile(str(path), "npy") as source, pytest.raises(KeyboardInterrupt):
        load.load(conn, target, source, chunk_rows=1000, progress=stop)
    other = _values(seed=4)
    np.save(tmp_path / "other.npy", other)
    os.replace(path, tmp_path / "was.npy")
    os.symlink(tmp_path / "other.npy", path)
    code, _, err = simdb(capsys, "load", "fp", str(path))
    assert code != 0 and "is not that file" in err and "--restart" in err
    assert len(_stored(conn, target)) == 1000  # nothing lost, nothing added

    code, out, err = simdb(capsys, "load", "fp", str(path), "--restart", "--json")
    assert code == 0, err
    assert json.loads(out)["rows"] == ROWS
    assert _stored(conn, target) == _expected(other, [str(i) for i in range(ROWS)])


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"key": "b", "fingerprint": "xyz"}', "bad fingerprint 'xyz'"),
        ('{"key": "b"}', "no field 'fingerprint' (fields: key)"),
        ('{"key": "", "fingerprint": "1"}', "the key '' is empty"),
        ('{"key": "b", "fingerprint": "1"', "malformed JSON"),
        ('["b", "1"]', "not a JSON object"),
    ],
)
def test_a_bad_record_is_named_and_nothing_is_lost(conn: Conn, tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": "a", "fingerprint": "00000000000000ff"}\n' + line + "\n")
    target = _new(conn)
    with (
        FingerprintFile(str(path), "jsonl", Fields(target.parse_given)) as source,
        pytest.raises(
            InputError, match=f"bad.jsonl:2: {says}".replace("(", r"\(").replace(")", r"\)")
        ) as error,
    ):
        load.load(conn, target, source)
    assert error.value.hint
    assert _stored(conn, target) == {}


def test_a_key_given_twice_is_refused_and_the_rows_stay(conn: Conn, tmp_path: Path) -> None:
    path = tmp_path / "twice.jsonl"
    path.write_text('{"key": "a", "fingerprint": "01"}\n{"key": "a", "fingerprint": "02"}\n')
    target = _new(conn)
    with (
        FingerprintFile(str(path), "jsonl", Fields(target.parse_given)) as source,
        pytest.raises(InvalidParameter, match=r"a key is given twice: Key \(key\)=\(a\)"),
    ):
        load.load(conn, target, source)
    assert len(conn.execute(sql.SQL("SELECT 1 FROM {}").format(target.table)).fetchall()) == 2
    assert catalog.load_mark(conn, "fp") is not None  # (--restart loads the fixed file)


def test_load_refuses_what_it_cannot_fill(
    conn: Conn, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "fp.npy", _values(10))
    filled = _new(conn)
    conn.execute(sql.SQL("INSERT INTO {} (key, fingerprint) VALUES ('x', 1)").format(filled.table))
    code, _, err = simdb(capsys, "load", "fp", str(tmp_path / "fp.npy"))
    assert code != 0 and "already holds rows" in err and "simdb ingest --fingerprint-field" in err
    index.save(conn, JaccardSpec().build("jac", DEFAULT_FEATURES, ROWS))
    code, _, err = simdb(capsys, "load", "jac", str(tmp_path / "fp.npy"))
    assert code != 0 and "64-bit fingerprints" in err
    np.save(tmp_path / "wide.npy", np.zeros((3, 2), dtype=np.uint64))
    code, _, err = simdb(capsys, "load", "fp", str(tmp_path / "wide.npy"))
    assert code != 0 and "shape (3, 2)" in err
    code, _, err = simdb(capsys, "load", "fp", str(tmp_path / "fp.txt"))
    assert code != 0 and "--format" in err


def test_a_load_in_a_callers_transaction_is_refused(dsn: str, tmp_path: Path) -> None:
    np.save(tmp_path / "fp.npy", _values(10))
    with psycopg.connect(dsn) as conn:
        target = _new(conn)
        conn.commit()
        with (
            FingerprintFile(str(tmp_path / "fp.npy"), "npy") as source,
            pytest.raises(InvalidParameter, match="autocommit"),
        ):
            load.load(conn, target, source)
