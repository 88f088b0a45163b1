"""What an index distributed on Citus would cost past this machine (pure code): shards, bytes per
worker, query latency and throughput, and all-pairs time, from unit costs measured on simdb's
development machine with `simdb bench --distributed` (1M rows, k = 3, a coordinator and two
workers on one 2-core VM; see docs/citus.md).

Two layouts are priced. By key (what `simdb create --distributed` makes): every probe runs on
every shard, a worker's shards in turn over one connection, so latency grows with the shards
per worker and throughput with the workers over the shards; all pairs gathers each permuted
table's prefixes on the coordinator and sends them to every shard. By prefix (Manku et al.'s
layout, `--layout prefix`): a probe of each permuted table reaches one shard; all pairs are
co-located self-joins that every worker runs on its own shards at once. In both, the client
holds only the pairs it is streamed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from simdb.errors import InvalidParameter
from simdb.plan.planner import DEFAULT_COSTS, WORKLOADS, Costs, choose, designs, price


@dataclass(frozen=True)
class ClusterCosts:
    """Unit costs of a Citus cluster, on top of the single-server Costs of each shard's work."""

    # Fitted to runs at 1M rows, k = 3 (b = 4), 2 workers with 4 and 32 shards (throughput, CPU),
    # and at 100k and 1M rows with 4 shards (latency, bytes and all pairs: docs/citus.md's table of
    # predicted against measured, where 4M rows checks the fit).
    fanout_ms: float = 0.38  # per query on the coordinator: plan, dispatch to the workers, merge
    task_ms: float = 0.37  # per shard a probe runs on, one after another on a worker's connection
    table_probe_ms: float = 0.05  # by prefix: per permuted table's probe (one statement probes all)
    coordinator_cpu_ms: float = 0.89  # CPU per query on the coordinator (and the client's driver)
    task_cpu_ms: float = 0.57  # CPU per shard task on a worker
    # all pairs, as a multiple of the planner's SQL self-joins on one server (planner.price's
    # batch_s) spread over the workers: by key each table's rows are sent to every shard and joined
    # there with its B-tree; by prefix the probe table's co-located self-joins
    key_join_factor: float = 6.5
    prefix_join_factor: float = 2.0
    prefix_copy_bytes: float = 100.0  # by prefix: a row's entry for each table, with its B-tree
    worker_cores: int = 1  # as measured: two workers shared two cores
    coordinator_cores: int = 1


DEFAULT_CLUSTER = ClusterCosts()


class LayoutCost(NamedTuple):
    """What one layout of a distributed index costs: room, query latency and rate, all pairs."""

    bytes_per_row: float
    p50_ms: float
    queries_per_s: float
    pairs_s: float

    def bytes_per_worker(self, rows: int, workers: int) -> float:
        return self.bytes_per_row * rows / workers

    def as_dict(self, rows: int, workers: int) -> dict[str, float]:
        return {
            "bytes_per_row": self.bytes_per_row,
            "bytes_per_worker": self.bytes_per_worker(rows, workers),
            "query_ms": self.p50_ms,
            "queries_per_s": self.queries_per_s,
            "pairs_s": self.pairs_s,
        }


@dataclass(frozen=True)
class ScalePlan:
    """A distributed index of `rows` rows over `workers` workers, priced in both layouts."""

    rows: int
    workers: int
    shards: int
    max_distance: int
    blocks: int
    tables: int
    by_key: LayoutCost
    by_prefix: LayoutCost
    workload: str  # online, batch or both: what `choice` weighs

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "workers": self.workers,
            "shards": self.shards,
            "max_distance": self.max_distance,
            "blocks": self.blocks,
            "tables": self.tables,
            "by_key": self.by_key.as_dict(self.rows, self.workers),
            "by_prefix": self.by_prefix.as_dict(self.rows, self.workers),
            "workload": self.workload,
            "choose": self.choice[0],
            "because": self.choice[1],
        }

    @property
    def choice(self) -> tuple[str, str]:
        """The layout to create for this workload ('key' or 'prefix'), and why in a few words."""
        key, prefix = self.by_key, self.by_prefix
        query, pairs = prefix.p50_ms / key.p50_ms, prefix.pairs_s / key.pairs_s
        room = prefix.bytes_per_row / key.bytes_per_row
        gain = {"online": query, "batch": pairs, "both": math.sqrt(query * pairs)}[self.workload]
        figures = f"by prefix: queries x{query:.2f}, all pairs x{pairs:.2f}, bytes x{room:.2f} of by key's"
        if gain < 1:
            return "prefix", f"{figures}; it is faster for a {self.workload} workload"
        return "key", f"{figures}; by key is as fast or faster for a {self.workload} workload, in less room"

    def lines(self) -> list[str]:
        rows = [
            f"  {label:<10} {cost.bytes_per_row:>9.0f} {gb_per_worker:>10.3g} {cost.p50_ms:>9.2f} "
            f"{cost.queries_per_s:>10.3g} {_duration(cost.pairs_s):>10}"
            for label, cost in (("by key", self.by_key), ("by prefix", self.by_prefix))
            for gb_per_worker in [cost.bytes_per_worker(self.rows, self.workers) / 1e9]
        ]
        return [
            f"{self.rows:.3g} rows, k = {self.max_distance}, {self.workers} workers, {self.shards} shards, "
            f"b = {self.blocks} ({self.tables} tables):",
            f"  {'layout':<10} {'bytes/row':>9} {'GB/worker':>10} {'query ms':>9} {'queries/s':>10} "
            f"{'all pairs':>10}",
            *rows,
            f"choose --layout {self.choice[0]} ({self.choice[1]})",
            "a rough model: unit costs fitted to `simdb bench --distributed` on simdb's development "
            "machine (2 workers sharing 2 cores); each worker priced as one such core; "
            "see simdb/plan/citus_cost.py and docs/citus.md's table of predicted against measured",
        ]


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def plan(
    rows: int,
    workers: int,
    max_distance: int,
    shards: int | None = None,
    workload: str = "both",
    costs: Costs = DEFAULT_COSTS,
    cluster: ClusterCosts = DEFAULT_CLUSTER,
) -> ScalePlan:
    """Price a distributed index: the block design simdb would pick for `rows`, split into
    `shards` shards (default: 2 per worker, as `simdb create --distributed` makes) over
    `workers` workers."""
    if workload not in WORKLOADS:
        raise InvalidParameter(f"unknown workload {workload!r}", f"use one of {', '.join(WORKLOADS)}")
    if workers < 1:
        raise InvalidParameter(f"workers {workers} is not positive", "give 1 or more workers")
    shards = shards if shards is not None else 2 * workers
    if shards < 1:
        raise InvalidParameter(f"shards {shards} is not positive", "give 1 or more shards")
    chosen = choose(designs(rows, max_distance, costs))
    tables = len(chosen.plan.tables)
    per_shard = price(chosen.plan, max(1, rows // shards), costs)
    shard_probe_ms = per_shard.online_ms - costs.query_ms  # a shard's probes and candidates
    per_worker = math.ceil(shards / workers)
    key_ms = cluster.fanout_ms + per_worker * (cluster.task_ms + shard_probe_ms)
    worker_ms = shards * (cluster.task_cpu_ms + shard_probe_ms)  # CPU of one query on the workers
    key_qps = min(
        cluster.coordinator_cores * 1000 / cluster.coordinator_cpu_ms,
        workers * cluster.worker_cores * 1000 / worker_ms,
    )
    # By prefix: table i's probe is one task on the one shard holding its prefix, and finds the
    # candidates of that table over all rows; the tables' tasks run on the workers at once.
    whole = price(chosen.plan, rows, costs)
    table_ms = (whole.online_ms - costs.query_ms) / tables
    prefix_ms = (
        cluster.fanout_ms
        + tables * cluster.table_probe_ms
        + math.ceil(tables / workers) * (cluster.task_ms + table_ms)
    )
    prefix_qps = min(
        cluster.coordinator_cores * 1000 / cluster.coordinator_cpu_ms,
        workers * cluster.worker_cores * 1000 / (tables * (cluster.task_cpu_ms + table_ms)),
    )
    return ScalePlan(
        rows=rows,
        workers=workers,
        shards=shards,
        max_distance=max_distance,
        blocks=chosen.plan.blocks,
        tables=tables,
        by_key=LayoutCost(
            whole.bytes_per_row,
            key_ms,
            key_qps,
            whole.batch_s * cluster.key_join_factor / (workers * cluster.worker_cores),
        ),
        by_prefix=LayoutCost(
            tables * cluster.prefix_copy_bytes + (whole.bytes_per_row - costs.row_bytes),
            prefix_ms,
            prefix_qps,
            whole.batch_s * cluster.prefix_join_factor / (workers * cluster.worker_cores),
        ),
        workload=workload,
    )
