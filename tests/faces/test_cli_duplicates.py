"""Batch mode from the command line: pairs and clusters output, dedup rules (the contract of pairs
and clusters against brute force is in test_contract.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import Conn, simdb

from simdb import ingest
from simdb.index import lifecycle as index
from simdb.index.modes import SimhashSpec


def test_dedup_rules(capsys: pytest.CaptureFixture[str], conn: Conn, tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(400))
    docs = tmp_path / "docs.jsonl"
    lines = [
        {"key": "a", "text": words},
        {"key": "b", "text": words + " tail"},
        {"key": "c", "text": words + " tail end"},
        {"key": "lonely", "text": "nothing like the others at all"},
    ]
    docs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    simdb(capsys, "create", "docs")
    for line in lines:  # one at a time, so added_at orders them
        simdb(capsys, "ingest", "docs", "-", stdin=(json.dumps(line) + "\n").encode())
    expected = {"first": "a", "last": "c", "shortest": "a", "longest": "c"}
    for rule, kept in expected.items():
        code, out, err = simdb(capsys, "dedup", "docs", "--keep", rule)
        assert code == 0
        assert out.splitlines() == ["cluster,key,action", f"1,{kept},keep"] + [
            f"1,{key},drop" for key in "abc" if key != kept
        ]
        assert err == "1 clusters: keep 1 keys, drop 2\n"
    code, out, _ = simdb(capsys, "dedup", "docs", "--keep", "first", "--format", "jsonl")
    assert json.loads(out.splitlines()[0]) == {"cluster": 1, "key": "a", "action": "keep"}


def test_pairs_and_clusters_cli(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    made = index.create(conn, "docs", SimhashSpec(max_distance=2))
    ingest.store(conn, made, {"x": 0b1111, "y": 0b1110, "w": 0b1100, "z": 0b0000, "far": 2**64 - 1})
    code, out, _ = simdb(capsys, "pairs", "docs")  # x-y 1, y-w 1, x-w 2, w-z 2; y-z 3 is too far
    assert code == 0 and out.splitlines()[0] == "key_a,key_b,distance"
    assert sorted(out.splitlines()[1:]) == ["w,x,2", "w,y,1", "w,z,2", "x,y,1"]
    code, out, _ = simdb(capsys, "pairs", "docs", "-k", "1", "--format", "jsonl")
    assert sorted(out.splitlines()) == [
        '{"key_a": "w", "key_b": "y", "distance": 1}',
        '{"key_a": "x", "key_b": "y", "distance": 1}',
    ]
    assert simdb(capsys, "clusters", "docs", "--json")[1] == (
        '{"clusters": 1, "keys": 4, "pairs": 4, "max_distance": 2, "table": "simdb.docs__clusters", '
        '"merged": false}\n'
    )
    assert simdb(capsys, "clusters", "docs", "-k", "1")[1] == (
        "1 clusters of 3 keys from 2 pairs within 1 bits (largest: 3 keys); stored in simdb.docs__clusters\n"
    )
    assert (
        simdb(capsys, "pairs", "docs", "--consumer", "nightly")[0] == 2
    )  # (a usage error: it goes with --new)
    assert simdb(capsys, "pairs", "docs", "-k", "3") == (
        1,
        "",
        "simdb: error: max distance 3 is outside 0..2 for index 'docs' (an index answers exactly up to the "
        "distance it was created with; create one with --max-distance 3 for more)\n",
    )


def test_pairs_new_reports_the_pairs_of_rows_written_since_the_last_run(
    capsys: pytest.CaptureFixture[str], conn: Conn
) -> None:
    made = index.create(conn, "docs", SimhashSpec(max_distance=2))
    ingest.store(conn, made, {"x": 0b1111, "y": 0b1110, "far": 2**64 - 1})
    code, out, _ = simdb(capsys, "pairs", "docs", "--new")  # the first run: every pair
    assert (code, out) == (0, "key_a,key_b,distance\nx,y,1\n")
    assert simdb(capsys, "pairs", "docs", "--new")[1] == "key_a,key_b,distance\n"  # nothing written since
    ingest.store(conn, made, {"w": 0b1100, "far": 2**64 - 2, "y": 0b1110})  # y as it was: not changed
    code, out, _ = simdb(capsys, "pairs", "docs", "--new", "--json")
    assert json.loads(out) == [
        {"key_a": "w", "key_b": "x", "distance": 2},
        {"key_a": "w", "key_b": "y", "distance": 1},
    ]
    # each consumer keeps its own mark: another one's first run reads every pair
    out = simdb(capsys, "pairs", "docs", "--new", "--consumer", "weekly")[1]
    assert sorted(out.splitlines()[1:]) == ["w,x,2", "w,y,1", "x,y,1"]
    assert conn.execute("SELECT consumer FROM simdb._pair_marks ORDER BY 1").fetchall() == [
        ("default",),
        ("weekly",),
    ]


def test_clusters_new_merges_the_pairs_of_rows_added(capsys: pytest.CaptureFixture[str], conn: Conn) -> None:
    made = index.create(conn, "docs", SimhashSpec(max_distance=2))
    ingest.store(conn, made, {"x": 0b1111, "y": 0b1110, "far": 2**64 - 1})
    assert simdb(capsys, "clusters", "docs", "--new")[1] == (
        "1 clusters of 2 keys from 1 pairs within 2 bits (largest: 2 keys); stored in simdb.docs__clusters\n"
    )
    ingest.store(conn, made, {"w": 0b1100, "near_far": 2**64 - 2})
    assert simdb(capsys, "clusters", "docs", "--new")[1] == (
        "2 clusters of 5 keys from 3 new pairs merged into the clusters stored within 2 bits (largest: 3"
        " keys); stored in simdb.docs__clusters\n"
    )
    rows = conn.execute("SELECT key, cluster FROM simdb.docs__clusters ORDER BY key").fetchall()
    assert rows == [("far", 1), ("near_far", 1), ("w", 2), ("x", 2), ("y", 2)]
