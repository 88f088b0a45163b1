"""Growing the test cluster: a third worker is added, Citus' rebalancer moves shards onto it, and
every distributed index still answers exactly as brute force does; then the worker is drained and
removed, and the answers stay the same (.ci/citus add-worker and remove-worker do the servers)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict
from support import ROOT, Conn, simdb
from support.oracles import JaccardOracle, Oracle, SimhashOracle, components

from simdb import duplicates, query
from simdb.follow import app_column, keep
from simdb.follow.queue import DrainReport
from simdb.index import catalog
from simdb.index import lifecycle as index
from simdb.index.placement import ByPrefix, Distributed, Placement

pytestmark = pytest.mark.citus

CITUS_SCRIPT = ROOT / ".ci" / "citus"
# Every layout a distributed index can have (by key today): each must survive a rebalance.
LAYOUTS: dict[str, Placement] = {"by_key": Distributed(shards=4), "by_prefix": ByPrefix(shards=4)}
# The tables of each layout that the rebalancer moves (by prefix: the probe table has a colocation
# group of its own, distributed by a bigint prefix)
MOVED = {
    "by_key": ("simdb.docs", "simdb.docs__clusters"),
    "by_prefix": ("simdb.docs", "simdb.docs__clusters", "simdb.docs__probes"),
}
ORACLES: dict[str, type[Oracle]] = {"simhash": SimhashOracle, "jaccard": JaccardOracle}
# Moves that need no logical replication: a cluster at PostgreSQL's default wal_level (replica)
# cannot move a shard otherwise (Citus' 'auto' retries the move forever).
TRANSFER = "block_writes"


def _cluster_folder() -> Path:
    folder = os.environ.get("SIMDB_CITUS_DIR")
    if not folder:
        if os.environ.get("SIMDB_REQUIRE_CITUS") == "1":
            pytest.fail("SIMDB_REQUIRE_CITUS=1 but SIMDB_CITUS_DIR is not set (see .ci/citus)")
        pytest.skip("adding a worker needs SIMDB_CITUS_DIR (the cluster's data folders)")
    return Path(folder)


def _ports(dsn: str) -> tuple[int, int]:
    """The coordinator's port (from its DSN) and the new worker's: SIMDB_CITUS_NEW_WORKER_PORT,
    else the coordinator's + 3 (.ci/citus starts the coordinator and two workers on the ports
    before it)."""
    coordinator = int(conninfo_to_dict(dsn).get("port") or 5432)
    return coordinator, int(os.environ.get("SIMDB_CITUS_NEW_WORKER_PORT") or coordinator + 3)


def _script(command: str, folder: Path, port: int, coordinator: int) -> None:
    done = subprocess.run(
        ["bash", str(CITUS_SCRIPT), command, str(folder), str(port)],
        env={**os.environ, "CITUS_PORTS": str(coordinator)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f".ci/citus {command} failed: {done.stderr}"


def _workers(conn: Conn) -> list[int]:
    return sorted(int(port) for _, port in conn.execute("SELECT * FROM citus_get_active_worker_nodes()"))


@contextmanager
def extra_worker(conn: Conn) -> Iterator[int]:
    """One more worker in the cluster while the block runs (its port); drained and removed after,
    whatever happened, so that the cluster is as it was for the other tests."""
    folder = _cluster_folder()
    coordinator, port = _ports(conn.info.dsn)
    before = _workers(conn)
    assert port not in before, f"port {port} is a worker already: set SIMDB_CITUS_NEW_WORKER_PORT"
    _script("add-worker", folder, port, coordinator)
    try:
        yield port
    finally:
        _script("remove-worker", folder, port, coordinator)
        assert _workers(conn) == before


def _placements(conn: Conn, relation: str) -> dict[int, int]:
    """{worker port: shards of `relation` it holds}."""
    rows = conn.execute(
        "SELECT n.nodeport, count(*) FROM pg_dist_shard AS s JOIN pg_dist_placement AS p USING (shardid)"
        " JOIN pg_dist_node AS n USING (groupid) WHERE s.logicalrelid = %s::regclass GROUP BY 1",
        (relation,),
    )
    return {int(port): int(count) for port, count in rows}


def _answers_equal_brute_force(conn: Conn, oracle: Oracle) -> None:
    made = oracle.made
    own = oracle.effective(None)
    for probe in oracle.probes:
        expected = oracle.near(probe, own)
        found = query.near(conn, made, oracle.stored[probe])
        assert [(m.key, getattr(m, made.score_column)) for m in found] == expected
        assert conn.execute(oracle.sql_near_key, (probe, None)).fetchall() == expected
        assert conn.execute(oracle.sql_near, (made.to_sql(oracle.stored[probe]), None)).fetchall() == expected
    expected_pairs = oracle.pairs(own)
    found_pairs = [(p.key_a, p.key_b, getattr(p, made.score_column)) for p in duplicates.pairs(conn, made)]
    assert sorted(found_pairs) == sorted(expected_pairs) and len(expected_pairs) >= 40
    assert set(conn.execute(oracle.sql_pairs, (None,)).fetchall()) == expected_pairs
    assert duplicates.clusters(conn, made).groups == components(expected_pairs)


# (simhash_covering: its rows and answers on Citus are simhash's; the contract suite runs it there)
@pytest.mark.parametrize("mode", [mode for mode in ORACLES if mode != "simhash_covering"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_rebalance_onto_a_new_worker_keeps_every_answer_exact(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], layout: str, mode: str
) -> None:
    oracle = ORACLES[mode](citus_conn, LAYOUTS[layout])
    duplicates.clusters(citus_conn, oracle.made)  # (a clusters table to move too)
    _answers_equal_brute_force(citus_conn, oracle)
    # every simdb table Citus may move has a primary key: logical replication could move it too
    without_key = citus_conn.execute(
        "SELECT p.logicalrelid::text FROM pg_dist_partition AS p WHERE p.logicalrelid::text LIKE 'simdb.%'"
        " AND NOT EXISTS (SELECT FROM pg_index AS x WHERE x.indrelid = p.logicalrelid AND x.indisprimary)"
    ).fetchall()
    assert without_key == []
    with extra_worker(citus_conn) as port:
        assert _placements(citus_conn, "simdb.docs").get(port) is None  # a new worker holds nothing
        citus_conn.execute(f"SELECT citus_rebalance_start(shard_transfer_mode => '{TRANSFER}')")
        citus_conn.execute("SELECT citus_rebalance_wait()")
        status = citus_conn.execute(
            "SELECT state FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1"
        ).fetchone()
        assert status == ("finished",)
        for relation in MOVED[layout]:
            assert _placements(citus_conn, relation).get(port, 0) >= 1
        _answers_equal_brute_force(citus_conn, oracle)
        # a new index counts the new worker: two shards per worker
        code, out, _ = simdb(capsys, "create", "grown", "--distributed")
        assert code == 0 and "distributed by key, 6 shards" in out, out
        assert simdb(capsys, "drop", "grown", "--yes")[0] == 0
        code, out, _ = simdb(capsys, "plan", "--rows", "1000000", "--workers", str(len(_workers(citus_conn))))
        assert code == 0 and "6 shards" in out, out
    assert _placements(citus_conn, "simdb.docs").get(port) is None  # drained back
    _answers_equal_brute_force(citus_conn, oracle)


def test_triggers_on_an_application_table_move_with_its_shards(citus_conn: Conn) -> None:
    """An application's distributed table with a side index fed by triggers (their inbox
    co-located with it) and an index in its column that simdb fills (a clearing trigger): after
    its shards move to a new worker, the changes written there are still recorded and synced."""
    citus_conn.execute("DROP TABLE IF EXISTS app_moved CASCADE")
    citus_conn.execute("CREATE TABLE app_moved (id bigint PRIMARY KEY, body text, fp bigint)")
    citus_conn.execute("SELECT create_distributed_table('app_moved', 'id', shard_count => 4)")
    try:
        words = [f"w{i}" for i in range(300)]
        for number in range(20):
            citus_conn.execute(
                "INSERT INTO app_moved (id, body) VALUES (%s, %s)",
                (number, " ".join(words[number:] + words[:number])),
            )
        side = keep.attach(citus_conn, "side", "public.app_moved", "id", "body")
        keep.sync(citus_conn, "side")
        app_column.attach_in_table(citus_conn, "column", "public.app_moved", "id", "fp", "body")
        keep.sync(citus_conn, "column")
        with extra_worker(citus_conn) as port:
            citus_conn.execute(f"SELECT citus_rebalance_start(shard_transfer_mode => '{TRANSFER}')")
            citus_conn.execute("SELECT citus_rebalance_wait()")
            moved = _placements(citus_conn, "public.app_moved").get(port, 0)
            assert moved >= 1 and _placements(citus_conn, "simdb.side__inbox").get(port, 0) == moved
            citus_conn.execute(
                "UPDATE app_moved SET body = body || ' more'"
            )  # every shard, the moved ones too
            assert citus_conn.execute("SELECT count(*) FROM app_moved WHERE fp IS NULL").fetchone() == (20,)
            report = keep.sync(citus_conn, "side")
            assert isinstance(report, DrainReport) and (report.queued, report.updated) == (20, 20)
            assert keep.sync(citus_conn, "column").changed
            expected = {
                str(key): side.sketch(str(body))
                for key, body in citus_conn.execute("SELECT id, body FROM app_moved")
            }
            for name in ("side", "column"):
                stored = citus_conn.execute(f"SELECT key, fingerprint FROM simdb.{name}").fetchall()
                assert {str(key): side.from_sql(value) for key, value in stored} == expected
    finally:
        for name in ("side", "column"):
            if name in catalog.index_names(citus_conn):
                index.drop(citus_conn, name)
        citus_conn.execute("DROP TABLE IF EXISTS app_moved CASCADE")
