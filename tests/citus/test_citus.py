"""Distributed indexes on a real Citus cluster (a coordinator and two workers; see conftest and
.ci/citus): the CLI's distributed commands, moving an index with rows onto the cluster, and what
a user sees when a worker stops in the middle of work. (Near, pairs, clusters and dedup equal to
brute force on distributed indexes: test_contract.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from support import Conn, simdb

from simdb import duplicates, fingerprint, ingest, query
from simdb.errors import InvalidParameter
from simdb.follow import app_column, keep
from simdb.index import lifecycle as index
from simdb.index.modes import SimhashIndex
from simdb.index.placement import ByPrefix, Distributed
from simdb.kernels.compiled import COMPILING
from simdb.measure.scaleout import probe_tasks
from simdb.sketch.bits import to_signed
from simdb.sources import readers

pytestmark = pytest.mark.citus

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
]


def _documents(folder: Path, count: int) -> dict[str, str]:
    """`count` documents of 300 words; document i+1 repeats document i with one word changed
    for every odd i, so there are near-duplicates to find."""
    folder.mkdir()
    texts: dict[str, str] = {}
    for number in range(count):
        if number % 2:
            words = texts[str(folder / f"d{number - 1}.txt")].split()
            words[150] = "changed"
        else:
            words = [WORDS[(number * 7 + i * i) % len(WORDS)] + str((number + i) % 97) for i in range(300)]
        path = folder / f"d{number}.txt"
        path.write_text(" ".join(words))
        texts[str(path)] = " ".join(words)
    return texts


def _count(conn: Conn, name: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM simdb.{name}").fetchone()
    assert row is not None
    return int(row[0])


def test_create_distributed_and_list_say_how_the_index_is_placed(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = simdb(capsys, "create", "docs", "--distributed", "--shards", "6")
    assert code == 0 and "distributed by key, 6 shards" in out
    shards = citus_conn.execute(
        "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'simdb.docs'::regclass"
    ).fetchone()
    assert shards == (6,)
    _documents(tmp_path / "docs", 40)
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "docs"))[0] == 0
    code, out, _ = simdb(capsys, "list")
    assert code == 0 and "docs" in out and "distributed by key, 6 shards" in out
    code, out, _ = simdb(capsys, "list", "--json")
    assert '"placement": "distributed"' in out and '"shards": 6' in out
    code, _, err = simdb(capsys, "create", "other", "--shards", "4")
    assert code == 1 and "--shards and --layout apply to a distributed index" in err
    code, out, _ = simdb(capsys, "create", "other", "--distributed")  # 2 shards per worker
    assert code == 0 and "distributed by key, 4 shards" in out


@pytest.mark.parametrize(
    ("placed", "tables"),
    [
        (Distributed(shards=4), ["simdb.docs", "simdb.docs__clusters"]),
        (ByPrefix(shards=4), ["simdb.docs", "simdb.docs__clusters", "simdb.docs__probes"]),
    ],
    ids=["by_key", "by_prefix"],
)
def test_distribute_moves_an_index_with_its_rows_and_clusters(
    citus_conn: Conn, tmp_path: Path, placed: Distributed, tables: list[str]
) -> None:
    texts = _documents(tmp_path / "docs", 60)
    made = index.create(citus_conn, "docs")
    ingest.ingest(citus_conn, made, readers.read([str(tmp_path / "docs")]))
    before_pairs = sorted((p.key_a, p.key_b, p.distance) for p in duplicates.pairs(citus_conn, made))
    before_clusters = duplicates.clusters(citus_conn, made).groups
    probe = next(iter(texts))
    before_near = query.near(citus_conn, made, made.sketch(texts[probe]))

    moved = index.distribute(citus_conn, "docs", placed)

    assert moved.placement == placed and index.get(citus_conn, "docs").placement == placed
    assert _count(citus_conn, "docs") == 60
    assert (
        sorted((p.key_a, p.key_b, p.distance) for p in duplicates.pairs(citus_conn, moved)) == before_pairs
        and len(before_pairs) >= 20
    )
    assert query.near(citus_conn, moved, moved.sketch(texts[probe])) == before_near
    assert duplicates.clusters(citus_conn, moved).groups == before_clusters
    distributed = citus_conn.execute(
        "SELECT logicalrelid::text FROM pg_dist_partition WHERE logicalrelid::text LIKE 'simdb.docs%'"
        " ORDER BY 1"
    ).fetchall()
    assert distributed == [(table,) for table in tables]
    with pytest.raises(InvalidParameter, match="distributed already"):
        index.distribute(citus_conn, "docs", Distributed())


def test_distributed_needs_citus(conn: Conn) -> None:
    with pytest.raises(InvalidParameter, match="no Citus extension") as refused:
        index.create(conn, "docs", placed=Distributed())
    assert "citus_add_node" in (refused.value.hint or "")
    assert index.table_exists(conn, "docs") is False  # nothing left behind


def _worker(conn: Conn) -> tuple[int, Path]:
    """The port and data folder of the cluster's last worker (SIMDB_CITUS_DIR/PORT, as .ci/citus
    lays them out)."""
    folder = os.environ.get("SIMDB_CITUS_DIR")
    if not folder:
        if os.environ.get("SIMDB_REQUIRE_CITUS") == "1":
            pytest.fail("SIMDB_REQUIRE_CITUS=1 but SIMDB_CITUS_DIR is not set (see .ci/citus)")
        pytest.skip("stopping a worker needs SIMDB_CITUS_DIR (the cluster's data folders)")
    row = conn.execute("SELECT max(node_port) FROM citus_get_active_worker_nodes()").fetchone()
    assert row is not None
    return int(row[0]), Path(folder) / str(row[0])


def _pg_ctl(data: Path, *action: str) -> None:
    binaries = subprocess.run(
        ["pg_config", "--bindir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    command = [f"{binaries}/pg_ctl", "-D", str(data), "-w", *action]
    if os.geteuid() == 0:  # PostgreSQL runs as the data folder's owner
        command = ["runuser", "-u", "postgres", "--", *command]
    subprocess.run(command, capture_output=True, check=True)


def _wait_for(conn: Conn, port: int) -> None:
    for _ in range(100):
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres").close()
            return
        except psycopg.OperationalError:
            time.sleep(0.1)
    pytest.fail(f"the worker on port {port} did not come back")


def test_a_worker_stopped_during_ingest_is_a_clear_error_and_a_rerun_completes(
    citus_conn: Conn, tmp_path: Path
) -> None:
    port, data = _worker(citus_conn)
    texts = _documents(tmp_path / "docs", 4000)
    index.create(citus_conn, "docs", placed=Distributed(shards=4))
    command = [
        sys.executable,
        "-c",
        "from simdb.cli import run; run()",
        "ingest",
        "docs",
        str(tmp_path / "docs"),
    ]
    running = subprocess.Popen([*command, "--batch-size", "50"], stderr=subprocess.PIPE, text=True)
    try:
        while _count(citus_conn, "docs") == 0 and running.poll() is None:
            time.sleep(0.02)
        _pg_ctl(data, "-m", "immediate", "stop")
        stored = _count_when_possible(citus_conn)
        _, err = running.communicate(timeout=120)
    finally:
        _pg_ctl(data, "-l", str(data) + ".log", "start")
        _wait_for(citus_conn, port)
    assert running.returncode == 1, err
    err = err.replace(COMPILING + "\n", "", 1)  # (a fresh install compiles the kernels first, and says so)
    # Citus names the worker it lost; when the coordinator's own backend goes down with it, the
    # client sees its connection dropped instead. Either way: one line that says what happened.
    assert err.startswith("simdb: error:") and "Traceback" not in err and err.count("\n") == 1, err
    assert f":{port}" in err or "the connection to the database was lost" in err, err
    assert "running the same command again completes the work" in err or "committed before it is kept" in err
    assert 0 < _count(citus_conn, "docs") < 4000
    assert stored is None or _count(citus_conn, "docs") >= stored  # nothing committed was lost

    rerun = subprocess.run(command, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert _count(citus_conn, "docs") == 4000
    made = index.get(citus_conn, "docs")
    probe = made.sketch(texts[str(tmp_path / "docs" / "d10.txt")])
    stored = {
        str(key): made.from_sql(value)
        for key, value in citus_conn.execute("SELECT key, fingerprint FROM simdb.docs")
    }
    expected = {key for key, value in stored.items() if bin(value ^ probe).count("1") <= 3}  # type: ignore[operator]
    assert {r.key for r in query.near(citus_conn, made, probe)} == expected and len(expected) >= 2


def _count_when_possible(conn: Conn) -> int | None:
    """The rows visible right after the worker stopped: None, since a count needs every shard."""
    try:
        return _count(conn, "docs")
    except psycopg.Error:
        return None


def test_a_query_while_a_worker_is_down_is_a_clear_error_and_nothing_is_lost(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    port, data = _worker(citus_conn)
    _documents(tmp_path / "docs", 40)
    assert simdb(capsys, "create", "docs", "--distributed", "--shards", "4")[0] == 0
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "docs"))[0] == 0
    probe = str(tmp_path / "docs" / "d0.txt")
    code, answer, _ = simdb(capsys, "query", "docs", "--file", probe)
    assert code == 0
    _pg_ctl(data, "-m", "immediate", "stop")
    try:
        for command in (["query", "docs", "--file", probe], ["pairs", "docs"]):
            code, _, err = simdb(capsys, *command)
            assert code == 1 and err.startswith("simdb: error:") and f":{port}" in err, err
    finally:
        _pg_ctl(data, "-l", str(data) + ".log", "start")
        _wait_for(citus_conn, port)
    assert _count(citus_conn, "docs") == 40
    assert simdb(capsys, "query", "docs", "--file", probe) == (0, answer, "")


@pytest.mark.parametrize("layout", ["key", "prefix"])
def test_delete_prune_and_grant_work_on_a_distributed_index(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], tmp_path: Path, layout: str
) -> None:
    _documents(tmp_path / "docs", 20)
    assert simdb(capsys, "create", "docs", "--mode", "jaccard", "--distributed", "--layout", layout)[0] == 0
    assert simdb(capsys, "ingest", "docs", str(tmp_path / "docs"))[0] == 0
    assert simdb(capsys, "delete", "docs", str(tmp_path / "docs" / "d0.txt")) == (
        0,
        "deleted 1 of 1 keys\n",
        "",
    )
    assert _count(citus_conn, "docs") == 19
    citus_conn.execute(
        "UPDATE simdb.docs SET seen_at = now() - interval '2 days' WHERE key LIKE %s", ("%d1_.txt",)
    )
    code, out, _ = simdb(capsys, "prune", "docs", "--older-than", "1d", "--yes")  # (10 of 19 rows)
    assert code == 0 and out.startswith("pruned 10 rows") and _count(citus_conn, "docs") == 9
    if layout == "prefix":  # every band's entry of the 11 rows removed went with it
        entries = citus_conn.execute(
            "SELECT count(*), count(DISTINCT key) FROM simdb.docs__probes"
        ).fetchone()
        assert entries == (9 * 16, 9)
    citus_conn.execute("DROP ROLE IF EXISTS simdb_citus_reader")
    citus_conn.execute("CREATE ROLE simdb_citus_reader LOGIN")
    try:
        assert simdb(capsys, "grant", "docs", "--reader", "simdb_citus_reader")[0] == 0
        dsn = citus_conn.info.dsn.replace("user=postgres", "user=simdb_citus_reader")
        with psycopg.connect(dsn) as reader:
            found = reader.execute(
                "SELECT count(*) FROM simdb.similar_key('docs', %s)", (str(tmp_path / "docs" / "d2.txt"),)
            ).fetchone()
            assert found is not None and found[0] >= 2  # d2 and its near copy d3
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                reader.execute("DELETE FROM simdb.docs")
    finally:
        citus_conn.execute("DROP OWNED BY simdb_citus_reader")
        citus_conn.execute("DROP ROLE simdb_citus_reader")


def test_an_index_in_a_distributed_application_table(citus_conn: Conn) -> None:
    """The natural case on Citus: the application's table is distributed by its key, and the
    index lives in its fingerprint column (the application writes it). Every combination of
    storage and kind of table: test_citus_apps.py."""
    citus_conn.execute("DROP TABLE IF EXISTS app_articles")
    citus_conn.execute("CREATE TABLE app_articles (id bigint PRIMARY KEY, body text, fp bigint)")
    citus_conn.execute("SELECT create_distributed_table('app_articles', 'id', shard_count => 4)")
    try:
        for triggers in (True, False):  # (side tables beside it work too: test_citus_apps.py)
            assert keep.attach(citus_conn, "side", "public.app_articles", "id", "body", triggers=triggers)
            index.drop(citus_conn, "side")
        made = app_column.attach_in_table(citus_conn, "arts", "public.app_articles", "id", "fp")
        assert made.whereabouts == "distributed by id, 4 shards, in public.app_articles.fp"
        values = {
            number: to_signed(fingerprint(f"article {number} about topic {number % 3}"))
            for number in range(40)
        }
        with citus_conn.transaction():
            for number, value in values.items():
                citus_conn.execute("INSERT INTO app_articles (id, fp) VALUES (%s, %s)", (number, value))
            found = citus_conn.execute(
                "SELECT key FROM simdb.near('arts', %s::bigint, 0)", (values[7],)
            ).fetchall()
            assert ("7",) in found  # in the writing transaction already
        assert citus_conn.execute("SELECT key FROM simdb.near_key('arts', '7', 0)").fetchall() == sorted(
            (str(n),) for n, v in values.items() if v == values[7]
        )
        index.drop(citus_conn, "arts")
        assert citus_conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'app_articles'"
        ).fetchone() == (1,)
    finally:
        citus_conn.execute("DROP TABLE IF EXISTS app_articles CASCADE")


def test_a_probe_by_prefix_reaches_one_shard_per_table(citus_conn: Conn) -> None:
    """Citus' own plan of a probe: by key every shard runs it; by prefix, the shard of each
    permuted table's prefix only (fewer where two prefixes fall in one shard)."""
    rows = {f"r{i}": (i * 0x9E3779B97F4A7C15) % 2**64 for i in range(500)}
    tasks = {}
    for name, placed in (("by_key", Distributed(shards=16)), ("by_prefix", ByPrefix(shards=16))):
        made = index.create(citus_conn, name, placed=placed)
        assert isinstance(made, SimhashIndex) and len(made.plan.tables) == 4
        ingest.store(citus_conn, made, rows)
        tasks[name] = [probe_tasks(citus_conn, made, value) for value in list(rows.values())[:20]]
        assert query.near(citus_conn, made, rows["r7"])[0].key == "r7"
    assert set(tasks["by_key"]) == {16}
    assert max(tasks["by_prefix"]) <= 4 and min(tasks["by_prefix"]) >= 1


def test_the_prefix_layout_from_the_command_line(
    citus_conn: Conn, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = simdb(capsys, "create", "docs", "--distributed", "--layout", "prefix", "--shards", "4")
    assert code == 0 and "distributed by prefix (Manku's layout), 4 shards" in out
    code, out, _ = simdb(capsys, "create", "sigs", "--mode", "jaccard", "--distributed", "--layout", "prefix")
    assert code == 0 and "distributed by prefix" in out
    for twin in (["docs_here"], ["sigs_here", "--mode", "jaccard"]):  # the same, on the coordinator alone
        assert simdb(capsys, "create", *twin)[0] == 0
    texts = _documents(tmp_path / "docs", 40)
    for name in ("docs", "sigs"):
        for where in (name, f"{name}_here"):
            assert simdb(capsys, "ingest", where, str(tmp_path / "docs"))[0] == 0
        code, out, _ = simdb(capsys, "pairs", name)
        code_here, out_here, _ = simdb(capsys, "pairs", f"{name}_here")
        assert code == code_here == 0 and sorted(out.splitlines()) == sorted(out_here.splitlines())
        assert len(out.splitlines()) >= 1 + 5  # (near copies found, not two empty answers)
    code, out, _ = simdb(capsys, "list", "--json")
    assert code == 0 and out.count('"layout": "prefix"') == 2 and out.count('"placement": "local"') == 2
    probe = next(iter(texts))
    code, out, _ = simdb(capsys, "query", "docs", "--file", probe)
    assert code == 0 and probe in out
    assert simdb(capsys, "delete", "docs", probe)[0] == 0
    left = citus_conn.execute("SELECT count(*) FROM simdb.docs__probes WHERE key = %s", (probe,)).fetchone()
    assert left == (0,)
    code, _, err = simdb(capsys, "create", "local", "--layout", "prefix")
    assert code == 1 and "--shards and --layout apply to a distributed index" in err
    assert simdb(capsys, "drop", "docs", "--yes")[0] == 0
    assert citus_conn.execute("SELECT to_regclass('simdb.docs__probes')").fetchone() == (None,)
