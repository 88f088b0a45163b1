"""Batch mode: pairs equal brute force, each once; clusters are the connected components; dedup rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psycopg
import pytest
from test_cli import simdb

from simdb import batch, index, ingest
from simdb.modes import SimhashSpec

Conn = psycopg.Connection[tuple[object, ...]]


def _flip(rng: np.random.Generator, value: int, bits: int) -> int:
    for bit in rng.choice(64, size=bits, replace=False):
        value ^= 1 << int(bit)
    return value


@pytest.fixture
def planted(conn: Conn) -> tuple[index.Index, dict[str, int]]:
    """3000 random rows plus 60 groups of near-copies at distances 0..4, and exact duplicates."""
    rng = np.random.default_rng(5)
    rows = {f"r{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=3000, dtype=np.uint64))}
    for group in range(60):
        base = int(rng.integers(0, 2**64, dtype=np.uint64))
        rows[f"g{group}_base"] = base
        rows[f"g{group}_same"] = base
        for distance in range(5):
            rows[f"g{group}_d{distance}"] = _flip(rng, base, distance)
    made = index.create(conn, "docs", SimhashSpec(max_distance=3), expected_rows=len(rows))
    ingest.store(conn, made, rows)
    ingest.vacuum(conn, made)
    return made, rows


def _brute_pairs(rows: dict[str, int], k: int) -> set[tuple[str, str, int]]:
    keys = sorted(rows)
    values = np.array([rows[key] for key in keys], dtype=np.uint64)
    found = set()
    for i, value in enumerate(values):
        distances = np.bitwise_count(values[i + 1 :] ^ value)
        for j in np.nonzero(distances <= k)[0]:
            found.add((keys[i], keys[i + 1 + int(j)], int(distances[j])))
    return found


@pytest.mark.parametrize("k", [0, 1, 3])
def test_pairs_equal_brute_force_each_once(
    conn: Conn, planted: tuple[index.Index, dict[str, int]], k: int
) -> None:
    made, rows = planted
    found = [(p.key_a, p.key_b, p.distance) for p in batch.pairs(conn, made, k)]
    assert len(found) == len(set(found))  # pairs found by several tables come back once
    assert set(found) == _brute_pairs(rows, k)
    sql_found = conn.execute("SELECT key_a, key_b, distance FROM simdb.pairs('docs', %s)", (k,)).fetchall()
    assert sorted(sql_found) == sorted(found)


def test_pairs_refuse_a_larger_distance(conn: Conn, planted: tuple[index.Index, dict[str, int]]) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("SELECT * FROM simdb.pairs('docs', 4)")


def _components(rows: dict[str, int], k: int) -> list[list[str]]:
    neighbours: dict[str, set[str]] = {}
    for a, b, _ in _brute_pairs(rows, k):
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    seen: set[str] = set()
    groups = []
    for start in sorted(neighbours):
        if start in seen:
            continue
        stack, group = [start], []
        seen.add(start)
        while stack:
            key = stack.pop()
            group.append(key)
            for other in neighbours[key] - seen:
                seen.add(other)
                stack.append(other)
        groups.append(sorted(group))
    return sorted(groups)


def test_clusters_are_connected_components_stored_for_sql(
    conn: Conn, planted: tuple[index.Index, dict[str, int]]
) -> None:
    made, rows = planted
    found = batch.clusters(conn, made, 3)
    assert found.groups == _components(rows, 3)
    assert all(len(group) >= 2 for group in found.groups)
    stored = conn.execute(
        "SELECT cluster, array_agg(key ORDER BY key) FROM simdb.docs__clusters GROUP BY 1 ORDER BY 1"
    )
    assert [keys for _, keys in stored.fetchall()] == found.groups
    joined = conn.execute(
        "SELECT count(*) FROM simdb.docs AS d JOIN simdb.docs__clusters AS c USING (key)"
    ).fetchone()
    assert joined == (found.keys,)
    # recomputing replaces the table
    smaller = batch.clusters(conn, made, 0)
    assert conn.execute("SELECT count(*) FROM simdb.docs__clusters").fetchone() == (smaller.keys,)


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
        '{"clusters": 1, "keys": 4, "pairs": 4, "max_distance": 2, "table": "simdb.docs__clusters"}\n'
    )
    assert simdb(capsys, "clusters", "docs", "-k", "1")[1] == (
        "1 clusters of 3 keys from 2 pairs within 1 bits (largest: 3 keys); stored in simdb.docs__clusters\n"
    )
    assert simdb(capsys, "pairs", "docs", "-k", "3") == (
        1,
        "",
        "simdb: error: max distance 3 is outside 0..2 for index 'docs' (an index answers exactly up to the "
        "distance it was created with; create one with --max-distance 3 for more)\n",
    )
