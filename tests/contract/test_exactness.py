"""Exactness at scale: 100,000+ random fingerprints with planted neighbours; results equal brute force."""

from __future__ import annotations

import numpy as np
import pytest
from support import Conn

from simdb import duplicates, ingest, query
from simdb.index import lifecycle as index
from simdb.index.modes import SimhashSpec

K = 3
QUERIES = 150


def _flip(rng: np.random.Generator, value: int, bits: int) -> int:
    for bit in rng.choice(64, size=bits, replace=False):
        value ^= 1 << int(bit)
    return value


@pytest.mark.slow
def test_near_equals_brute_force_on_100k_rows(conn: Conn) -> None:
    rng = np.random.default_rng(2026)
    rows: dict[str, int] = {
        f"random{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=100_000, dtype=np.uint64))
    }
    queries = [int(v) for v in rng.integers(0, 2**64, size=QUERIES, dtype=np.uint64)]
    for q, value in enumerate(queries):
        rows[f"q{q}_same_a"] = value  # several keys sharing one fingerprint
        rows[f"q{q}_same_b"] = value
        for distance in range(K + 2):  # every distance 0..k+1, k+1 must not come back
            for copy in range(2):
                rows[f"q{q}_d{distance}_{copy}"] = _flip(rng, value, distance)
    made = index.create(conn, "big", SimhashSpec(max_distance=K), expected_rows=len(rows))
    keys = list(rows)
    for start in range(0, len(keys), 20_000):
        ingest.store(conn, made, {key: rows[key] for key in keys[start : start + 20_000]})
    ingest.vacuum(conn, made)

    stored = np.array([rows[key] for key in keys], dtype=np.uint64)
    key_array = np.array(keys)
    for q, value in enumerate(queries):
        distances = np.bitwise_count(stored ^ np.uint64(value))
        for k in (K, 1):
            hits = np.nonzero(distances <= k)[0]
            expected = sorted((int(distances[i]), str(key_array[i])) for i in hits)
            found = [(m.distance, m.key) for m in query.near(conn, made, value, k)]
            assert found == expected
        found_keys = {m.key for m in query.near(conn, made, value)}
        # duplicates all come back, the bound is inclusive, and k + 1 stays out
        assert {f"q{q}_same_a", f"q{q}_same_b", f"q{q}_d0_0", f"q{q}_d{K}_0", f"q{q}_d{K}_1"} <= found_keys
        assert not {f"q{q}_d{K + 1}_0", f"q{q}_d{K + 1}_1"} & found_keys


@pytest.mark.slow
def test_pairs_by_sorting_equal_the_pairs_function_and_brute_force_on_100k_rows(conn: Conn) -> None:
    rng = np.random.default_rng(7)
    rows: dict[str, int] = {
        f"random{i}": int(v) for i, v in enumerate(rng.integers(0, 2**64, size=100_000, dtype=np.uint64))
    }
    for group in range(300):  # planted groups: a value, a twin, and copies 1..k+1 bits away
        value = int(rng.integers(0, 2**64, dtype=np.uint64))
        rows[f"g{group}_twin"] = rows[f"g{group}"] = value
        for distance in range(1, K + 2):
            rows[f"g{group}_d{distance}"] = _flip(rng, value, distance)
    made = index.create(conn, "big", SimhashSpec(max_distance=K), expected_rows=len(rows))
    ingest.bulk_load(conn, made, rows.items())
    ingest.vacuum(conn, made)
    planted = [key for key in rows if key.startswith("g")]
    for k in (K, 1):
        expected = {
            (min(a, b), max(a, b), int(np.bitwise_count(np.uint64(rows[a] ^ rows[b]))))
            for i, a in enumerate(planted)
            for b in planted[i + 1 :]
            if int(np.bitwise_count(np.uint64(rows[a] ^ rows[b]))) <= k
        }
        by_sorting = [(p.key_a, p.key_b, p.distance) for p in duplicates.pairs(conn, made, k)]
        assert len(by_sorting) == len(set(by_sorting)) and set(by_sorting) == expected
        in_sql = conn.execute("SELECT key_a, key_b, distance FROM simdb.pairs('big', %s)", (k,)).fetchall()
        assert set(in_sql) == expected
