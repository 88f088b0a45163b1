"""Index administration: init, create, distribute, attach, sync, status, plan, list, drop, grant."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from simdb import schema, warmup
from simdb.cli.common import (
    bits_option,
    byte_size,
    counter,
    database,
    dsn_option,
    features_option,
    fingerprint_spec_option,
    jobs_option,
    json_option,
    planned_distance,
    reconnector,
    shards_option,
    show,
    signature_spec_option,
    spec_from_options,
)
from simdb.errors import InvalidParameter
from simdb.follow import app_column, keep
from simdb.index import lifecycle as indexes
from simdb.index import modes, names
from simdb.index.modes import widths
from simdb.index.placement import DEFAULT_LAYOUT, LAYOUTS, LOCAL
from simdb.plan import citus_cost, planner
from simdb.plan.planner import DEFAULT_EXPECTED_ROWS, WORKLOADS
from simdb.sketch.features import Features
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD
from simdb.sketch.simhash import DEFAULT_MAX_DISTANCE

F = TypeVar("F", bound=Callable[..., Any])


@click.command()
@dsn_option
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create or migrate simdb's schema and compile its kernels (commands that write
    create the schema on first use, and the first command that fingerprints compiles the kernels)."""
    with database(ctx, create_schema=True):
        pass
    click.echo(f"simdb schema is at revision {schema.HEAD}")
    warmup.warm()
    click.echo("kernels are compiled (fingerprints, signatures, all pairs)")


def _workload(default: str | None) -> Callable[[F], F]:
    return click.option(
        "--workload",
        type=click.Choice(WORKLOADS),
        default=default,
        show_default="both",
        help="What the index must be fast at: online queries, batch pairs, or both.",
    )


def index_options(function: F) -> F:
    """The options that shape a new index (create, attach): the mode and its Spec's parameters."""
    for option in reversed(
        [
            click.option(
                "--mode",
                type=click.Choice(modes.MODES),
                default=modes.DEFAULT_MODE,
                show_default=True,
                help="simhash: Hamming distance on 64- or 128-bit fingerprints, exact within k bits "
                "(close copies); jaccard: MinHash LSH, pairs at or above a Jaccard threshold (looser "
                "similarity).",
            ),
            click.option(
                "--max-distance",
                "-k",
                type=int,
                help="simhash: largest Hamming distance the index answers exactly (0-8; 0-16 with "
                f"--bits 128) [default: {DEFAULT_MAX_DISTANCE} for one-bit MinHash, 3 for SimHash].",
            ),
            click.option(
                "--expected-rows",
                type=int,
                default=DEFAULT_EXPECTED_ROWS,
                show_default=True,
                help="simhash: rows you expect; the planner picks the number of blocks (see `simdb plan`).",
            ),
            _workload(None),
            click.option(
                "--blocks",
                type=int,
                help="simhash: number of blocks b (> k); overrides the planner.",
            ),
            fingerprint_spec_option,
            bits_option,
            signature_spec_option,
            click.option(
                "--threshold",
                type=float,
                help=f"jaccard: the Jaccard similarity a pair must reach [default: {DEFAULT_THRESHOLD}].",
            ),
            click.option(
                "--permutations",
                type=int,
                help=f"jaccard: MinHash signature length (2-1024) [default: {DEFAULT_PERMUTATIONS}].",
            ),
            features_option,
        ]
    ):
        function = option(function)
    return function


def _index_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The arguments of index.create: the mode's Spec, the features and the expected rows."""
    return {
        "spec": spec_from_options(options["mode"], options),
        "features": Features.parse(options["features"]),
        "expected_rows": options["expected_rows"],
    }


def _shards_option(function: F) -> F:
    function = click.option(
        "--layout",
        type=click.Choice(sorted(LAYOUTS)),
        default=DEFAULT_LAYOUT,
        show_default=True,
        help="With a distributed index: split its rows by key (a probe runs on every shard), or also "
        "lay them out by prefix, Manku's layout (each permuted table's probe reaches one shard, all "
        "pairs run on the shards; a row is stored once per table). `simdb plan` says which to choose.",
    )(function)
    return shards_option("With a distributed index")(function)


@click.command()
@click.argument("name")
@index_options
@click.option(
    "--distributed",
    is_flag=True,
    help="On a Citus coordinator: make the index's table a distributed table, split by key over "
    "the workers (see `simdb distribute`).",
)
@_shards_option
@json_option
@dsn_option
@click.pass_context
def create(
    ctx: click.Context,
    /,
    name: str,
    distributed: bool,
    shards: int | None,
    layout: str,
    as_json: bool,
    **options: Any,
) -> None:
    """Create index NAME, readable in SQL as simdb."NAME"."""
    if (shards is not None or layout != DEFAULT_LAYOUT) and not distributed:
        raise InvalidParameter(
            "--shards and --layout apply to a distributed index",
            "add --distributed, or leave out --shards and --layout",
        )
    placed = LAYOUTS[layout](shards) if distributed else LOCAL
    with database(ctx, create_schema=True) as conn:
        index = indexes.create(conn, name, **_index_settings(options), placed=placed)
    show(index, as_json, lead="created")


@click.command(name="distribute")
@click.argument("name")
@_shards_option
@json_option
@dsn_option
@click.pass_context
def distribute_(ctx: click.Context, name: str, shards: int | None, layout: str, as_json: bool) -> None:
    """Make index NAME a Citus distributed table, rows included (run on the coordinator).

    Its rows are split by key over the workers' shards (with --layout prefix, also copied into a
    probe table split by each permuted table's prefix); queries, ingest and every other command
    work on it as before, and `simdb list` shows how it is placed.
    """
    with database(ctx) as conn:
        index = indexes.distribute(conn, name, LAYOUTS[layout](shards))
    show(index, as_json, lead="distributed")


@click.command(name="attach")
@click.argument("name")
@click.option("--table", required=True, metavar="SCHEMA.TABLE", help="Your existing table.")
@click.option("--key-column", required=True, help="Its unique key column (any type; answered as text).")
@click.option(
    "--text-column",
    help="Its text column to fingerprint (required unless --fingerprint-column/--signature-column).",
)
@click.option(
    "--fingerprint-column",
    metavar="COLUMN",
    help="simhash: keep the index in this column of your table (bigint, or bit(128) with --bits 128): "
    "simdb's B-trees go on it and every write is searchable at once; with --text-column, simdb "
    "fills it where it is NULL.",
)
@click.option(
    "--signature-column",
    metavar="COLUMN",
    help="jaccard: the same, for a bigint[] column of MinHash signatures.",
)
@click.option("--where", "condition", metavar="SQL", help="Only rows matching this SQL condition.")
@click.option("--no-sync", is_flag=True, help="Only attach; fingerprint later with `simdb sync`.")
@click.option(
    "--cascade",
    is_flag=True,
    help="Index rows go with their source row at once (a foreign key ON DELETE CASCADE to a unique "
    "--key-column; it then blocks TRUNCATE and DROP of your table). Without it, sync removes them.",
)
@click.option(
    "--no-triggers",
    is_flag=True,
    help="Add no triggers to your table: each sync then compares the whole table with the index "
    "(by default triggers queue the changed keys, and a sync applies only those).",
)
@index_options
@jobs_option
@json_option
@dsn_option
@click.pass_context
def attach_(
    ctx: click.Context,
    /,
    name: str,
    table: str,
    key_column: str,
    text_column: str | None,
    fingerprint_column: str | None,
    signature_column: str | None,
    condition: str | None,
    no_sync: bool,
    cascade: bool,
    no_triggers: bool,
    jobs: int,
    as_json: bool,
    **options: Any,
) -> None:
    """Create index NAME over an existing table, then sync it.

    With --text-column alone, simdb."NAME" is a table of simdb's that keeps one row per source row,
    keyed by the source key as text: triggers on your table queue the keys of changed rows (unless
    --no-triggers), and `simdb sync NAME` applies them (new and changed rows are fingerprinted,
    deleted ones removed).

    With --fingerprint-column (or --signature-column), the index lives in your table: simdb's
    B-trees go on that column and simdb."NAME" is a view of your table, so what your application
    writes there is found in the same transaction. With --text-column too, `simdb sync NAME` fills
    the column where it is NULL (a trigger clears it when the text changes).
    """
    settings = _index_settings(options)
    sketch_columns = {"fingerprint": fingerprint_column, "signature": signature_column}
    given = {kind: column for kind, column in sketch_columns.items() if column}
    if len(given) > 1:
        raise click.UsageError("give one of --fingerprint-column and --signature-column")
    if not given and not text_column:
        raise click.UsageError("give --text-column, or --fingerprint-column/--signature-column")
    if given and (cascade or no_triggers):  # (before connecting: nothing is made for a usage error)
        raise click.UsageError(
            "--cascade and --no-triggers are for a side table: an index in your table has no rows of its own"
        )
    with database(ctx, create_schema=True) as conn:
        if given:
            ((kind, column),) = given.items()
            index = app_column.attach_in_table(
                conn,
                name,
                table,
                key_column,
                column,
                text_column,
                condition,
                **settings,
                sketch_kind=kind,
                defer_btrees=not no_sync,
            )
        else:
            index = keep.attach(
                conn,
                name,
                table,
                key_column,
                text_column or "",
                condition,
                **settings,
                cascade=cascade,
                triggers=not no_triggers,
            )
        show(index, as_json, lead="attached")  # with --json, one JSON line for the index, one for the sync
        if not no_sync and text_column:
            with counter(f"sync {name}", " rows") as done:
                show(keep.first_sync(conn, name, done, jobs=jobs), as_json)


@click.command(name="sync")
@click.argument("name")
@click.option(
    "--watch",
    is_flag=True,
    help="Keep syncing until Ctrl-C: with triggers, on each commit that queued a change (LISTEN); "
    "without, every --interval seconds. Prints the first round and each one that changed something.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1),
    default=5.0,
    show_default=True,
    help="--watch: seconds between two syncs without triggers; with them, between two looks at "
    "the queue in case a notification was missed.",
)
@click.option(
    "--full",
    is_flag=True,
    help="A repair: compare the whole table with a side table rather than apply the queued changes "
    "(clears the queue); for an index in your table's column, sketch every row again.",
)
@jobs_option
@json_option
@dsn_option
@click.pass_context
def sync_(
    ctx: click.Context, name: str, watch: bool, interval: float, full: bool, jobs: int, as_json: bool
) -> None:
    """Bring attached index NAME up to date with its table: unchanged rows cost nothing.

    A side table applies the changes its triggers queued (or, without triggers, compares the whole
    table); an index in your table's column fills the rows whose fingerprint is NULL.
    """
    if watch and full:
        raise InvalidParameter(
            "--full and --watch do not go together", "run `sync --full` once, then --watch"
        )
    with database(ctx) as conn:
        if watch:
            try:
                keep.watch(
                    conn,
                    name,
                    interval,
                    lambda report: show(report, as_json),
                    jobs=jobs,
                    connect=reconnector(ctx),
                    say=lambda line: click.echo(f"simdb: sync --watch {name}: {line}", err=True),
                )
            except KeyboardInterrupt:  # the documented way to stop watching: a normal end
                return
        else:
            with counter(f"sync {name}", " rows") as done:
                show(keep.sync(conn, name, done, full=full, jobs=jobs), as_json)


@click.command(name="status")
@click.argument("name")
@json_option
@dsn_option
@click.pass_context
def status_(ctx: click.Context, name: str, as_json: bool) -> None:
    """How far attached index NAME is behind its table: rows queued, failed, the oldest's age (an
    index in your table's column: the rows with text and no fingerprint yet)."""
    with database(ctx) as conn:
        show(keep.status(conn, name), as_json)


@click.command(name="reindex")
@click.argument("name")
@jobs_option
@json_option
@dsn_option
@click.pass_context
def reindex_(ctx: click.Context, name: str, jobs: int, as_json: bool) -> None:
    """Move attached index NAME to the newest fingerprint spec, in place, while queries run.

    Rows are re-fingerprinted from the table's text batch by batch; the index switches to the
    new spec when all are done. Indexes ingested from files must be ingested again instead.
    """
    with database(ctx) as conn, counter(f"reindex {name}", " rows") as done:
        show(keep.reindex(conn, name, done, jobs=jobs), as_json)


@click.command(name="plan")
@click.option(
    "--rows",
    type=click.IntRange(1),
    default=DEFAULT_EXPECTED_ROWS,
    show_default=True,
    help="Rows the index is to hold.",
)
@planned_distance("The largest Hamming distance to find exactly (0 to 8 at 64 bits, 16 at 128).")
@_workload("both")
@bits_option
@click.option(
    "--workers",
    type=click.IntRange(1),
    help="Price a distributed index on this many Citus workers instead: shards, bytes per worker, "
    "query latency and throughput, all pairs, for both layouts.",
)
@shards_option("--workers")
@click.option(
    "--memory",
    metavar="SIZE",
    callback=lambda ctx, param, value: None if value is None else byte_size(ctx, param, value),
    help="The memory the index may count on being cached in (64G, 512M, ...): designs larger are set "
    "aside [default: 3/4 of this machine's memory, as simdb create counts].",
)
@json_option
def plan_(
    rows: int,
    max_distance: int,
    workload: str,
    bits: int | None,
    workers: int | None,
    shards: int | None,
    memory: int | None,
    as_json: bool,
) -> None:
    """Compare the block designs for ROWS rows and distance K, and mark the one simdb would pick;
    with --workers, what a distributed index of ROWS rows would cost."""
    if workers is not None:
        show(citus_cost.plan(rows, workers, max_distance, shards, workload), as_json)
        return
    if shards is not None:
        raise InvalidParameter("--shards applies with --workers", "add --workers N, or leave out --shards")
    budget = memory if memory is not None else planner.machine_memory()
    coverings = (False, True) if widths.width(bits or 64).covering else (False,)  # (as `simdb create`)
    compared = planner.compare(rows, max_distance, workload, bits or 64, budget or None, coverings=coverings)
    show(compared, as_json)


@click.command(name="list")
@json_option
@dsn_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the indexes with their row counts and parameters."""
    with database(ctx) as conn:
        listing = indexes.Listing(indexes.list_indexes(conn))
    if not listing.summaries and not as_json:
        click.echo("no indexes yet; create one with `simdb create NAME`", err=True)
        return
    show(listing, as_json)


@click.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@dsn_option
@click.pass_context
def drop(ctx: click.Context, name: str, yes: bool) -> None:
    """Drop index NAME and all its rows."""
    names.check_name(name)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidParameter(f"dropping index {name!r} needs confirmation", "pass --yes")
        click.confirm(f"Drop index {name} and all its rows?", abort=True)
    with database(ctx) as conn:
        indexes.drop(conn, name)
    click.echo(f"dropped index {name}")


@click.command(name="grant")
@click.argument("name")
@click.option("--reader", "readers_", multiple=True, metavar="ROLE", help="May query the index (repeatable).")
@click.option(
    "--writer", "writers", multiple=True, metavar="ROLE", help="May also ingest and delete (repeatable)."
)
@dsn_option
@click.pass_context
def grant_(ctx: click.Context, name: str, readers_: tuple[str, ...], writers: tuple[str, ...]) -> None:
    """Let database roles query index NAME (--reader) or also write it (--writer), and nothing more."""
    if not readers_ and not writers:
        raise click.UsageError("give at least one --reader ROLE or --writer ROLE")
    with database(ctx) as conn:
        for role in readers_:
            indexes.grant(conn, name, role)
        for role in writers:
            indexes.grant(conn, name, role, writer=True)
    granted = [f"{role} (reader)" for role in readers_] + [f"{role} (writer)" for role in writers]
    click.echo(f"granted index {name} to {', '.join(granted)}")


COMMANDS = [init, create, distribute_, attach_, sync_, status_, reindex_, plan_, list_, drop, grant_]
