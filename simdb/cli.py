"""The `simdb` command: parses options, calls one library function, prints the result.

simdb's own errors become one line on stderr with a hint and exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import click
import psycopg

from simdb import attach, batch, connection, embedded, index, ingest, planner, query, readers, schema
from simdb.bits import parse_hex, to_hex, to_signed
from simdb.blocks import DEFAULT_MAX_DISTANCE
from simdb.errors import DatabaseUnavailable, InputError, InvalidParameter, SimdbError
from simdb.minhash import DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD, document_signature
from simdb.planner import DEFAULT_EXPECTED_ROWS, WORKLOADS
from simdb.simhash import EmptyDocument, Features, fingerprint

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Settings:
    dsn: str | None


@contextmanager
def database(ctx: click.Context) -> Iterator[connection.Connection]:
    """Connect (starting the embedded server if no DSN is given) and migrate simdb's schema."""
    settings: Settings = ctx.find_object(Settings) or Settings(None)
    target = connection.resolve(settings.dsn)
    with connection.connect(target) as conn:
        schema.ensure_schema(conn)
        yield conn


def json_option(function: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(function)


def emit_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=None))


def features_option(function: F) -> F:
    return click.option(
        "--features",
        default="word:3",
        show_default=True,
        help="Shingles: word:N (word n-grams) or char:N (character n-grams).",
    )(function)


workload_option = click.option(
    "--workload",
    type=click.Choice(WORKLOADS),
    default="both",
    show_default=True,
    help="What the index must be fast at: online queries, batch pairs, or both.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--dsn",
    metavar="DSN",
    help="PostgreSQL connection (URL or key=value). Default: SIMDB_DSN, DATABASE_URL, the PG* "
    "variables, else simdb's own embedded server.",
)
@click.version_option(package_name="simdb")
@click.pass_context
def main(ctx: click.Context, dsn: str | None) -> None:
    """Near-duplicate search that lives in PostgreSQL.

    \b
    Quick start (no database needed; simdb starts its own):
      simdb create docs
      simdb ingest docs ./my-folder
      simdb query docs --file ./my-folder/a.txt
    """
    ctx.obj = Settings(dsn)


@main.command()
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create or migrate simdb's schema (other commands do this on first use)."""
    with database(ctx):
        pass
    click.echo(f"simdb schema is at revision {schema.HEAD}")


def index_options(function: F) -> F:
    """The options that shape a new index (create, attach)."""
    for option in reversed(
        [
            click.option(
                "--mode",
                type=click.Choice(index.MODES),
                default="simhash",
                show_default=True,
                help="simhash: Hamming distance on 64-bit fingerprints, exact within k bits (close copies); "
                "jaccard: MinHash LSH, pairs at or above a Jaccard threshold (looser similarity).",
            ),
            click.option(
                "--max-distance",
                "-k",
                type=int,
                default=None,
                help=f"simhash: largest Hamming distance the index answers exactly (0-8) "
                f"[default: {DEFAULT_MAX_DISTANCE}].",
            ),
            click.option(
                "--expected-rows",
                type=int,
                default=DEFAULT_EXPECTED_ROWS,
                show_default=True,
                help="simhash: rows you expect; the planner picks the number of blocks (see `simdb plan`).",
            ),
            workload_option,
            click.option(
                "--blocks",
                type=int,
                default=None,
                help="simhash: number of blocks b (> k); overrides the planner.",
            ),
            click.option(
                "--threshold",
                type=float,
                default=None,
                help=f"jaccard: the Jaccard similarity a pair must reach [default: {DEFAULT_THRESHOLD}].",
            ),
            click.option(
                "--permutations",
                type=int,
                default=None,
                help=f"jaccard: MinHash signature length (2-1024) [default: {DEFAULT_PERMUTATIONS}].",
            ),
            features_option,
        ]
    ):
        function = option(function)
    return function


T = TypeVar("T")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def _index_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of index.create; an option of the other mode is a usage error."""
    mode = options["mode"]
    other_mode, others = {
        "simhash": ("jaccard", ("threshold", "permutations")),
        "jaccard": ("simhash", ("max_distance", "blocks")),
    }[mode]
    given = [f"--{name.replace('_', '-')}" for name in others if options[name] is not None]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise click.UsageError(f"{' and '.join(given)} {verb} to --mode {other_mode} only")
    settings: dict[str, Any] = {
        "mode": mode,
        "expected_rows": options["expected_rows"],
        "features": Features.parse(options["features"]),
    }
    if mode == "simhash":
        settings["max_distance"] = _given(options["max_distance"], DEFAULT_MAX_DISTANCE)
        settings.update(blocks=options["blocks"], workload=options["workload"])
    else:
        settings["threshold"] = _given(options["threshold"], DEFAULT_THRESHOLD)
        settings["permutations"] = _given(options["permutations"], DEFAULT_PERMUTATIONS)
    return settings


def _describe(made: index.Index, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json({"name": made.name, "mode": made.mode, **made.parameters(), "features": str(made.features)})
        return
    click.echo(
        f"{verb} {made.mode} index {made.name}: {made.summary}, features {made.features}; "
        f'SQL: simdb."{made.name}"'
    )


@main.command()
@click.argument("name")
@index_options
@json_option
@click.pass_context
def create(ctx: click.Context, /, name: str, as_json: bool, **options: Any) -> None:
    """Create index NAME, readable in SQL as simdb."NAME"."""
    with database(ctx) as conn:
        made = index.create(conn, name, **_index_settings(options))
    _describe(made, as_json, "created")


@main.command(name="attach")
@click.argument("name")
@click.option("--table", required=True, metavar="SCHEMA.TABLE", help="Your existing table.")
@click.option("--key-column", required=True, help="Its key column (any type; stored as text).")
@click.option("--text-column", required=True, help="Its text column to fingerprint.")
@click.option("--where", "condition", metavar="SQL", help="Only rows matching this SQL condition.")
@click.option("--no-sync", is_flag=True, help="Only attach; fingerprint later with `simdb sync`.")
@index_options
@json_option
@click.pass_context
def attach_(
    ctx: click.Context,
    /,
    name: str,
    table: str,
    key_column: str,
    text_column: str,
    condition: str | None,
    no_sync: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Create index NAME over an existing table (which is not altered), then sync it.

    simdb."NAME" keeps one row per source row, keyed by the source key as text. `simdb sync NAME`
    brings it up to date again later: new and changed rows are fingerprinted, deleted ones removed.
    """
    with database(ctx) as conn:
        made = attach.attach(
            conn, name, table, key_column, text_column, condition, **_index_settings(options)
        )
        _describe(made, as_json and no_sync, "attached")
        if not no_sync:
            _show_sync(attach.sync(conn, name), as_json)


@main.command(name="sync")
@click.argument("name")
@click.option("--watch", is_flag=True, help="Keep syncing, polling every --interval seconds, until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(0.1), default=5.0, show_default=True)
@json_option
@click.pass_context
def sync_(ctx: click.Context, name: str, watch: bool, interval: float, as_json: bool) -> None:
    """Bring attached index NAME up to date with its table: unchanged rows cost nothing."""

    with database(ctx) as conn:
        if watch:
            attach.watch(conn, name, interval, lambda report: _show_sync(report, as_json))
        else:
            _show_sync(attach.sync(conn, name), as_json)


def _show_sync(report: attach.SyncReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.__dict__)
    else:
        click.echo(report.summary())


@main.command(name="plan")
@click.option("--rows", type=click.IntRange(1), default=DEFAULT_EXPECTED_ROWS, show_default=True)
@click.option("--max-distance", "-k", type=int, default=DEFAULT_MAX_DISTANCE, show_default=True)
@workload_option
@json_option
def plan_(rows: int, max_distance: int, workload: str, as_json: bool) -> None:
    """Compare the block designs for ROWS rows and distance K, and mark the one simdb would pick."""
    options = planner.designs(rows, max_distance)
    chosen = planner.choose(options, workload)
    if as_json:
        emit_json(
            [
                {
                    "blocks": d.plan.blocks,
                    "tables": d.tables,
                    "prefix_bits": list(d.prefix_bits),
                    "candidates_per_query": d.candidates_per_query,
                    "candidates_per_batch": d.candidates_per_batch,
                    "bytes_per_row": d.bytes_per_row,
                    "query_ms": d.online_ms,
                    "pairs_s": d.batch_s,
                    "load_s": d.load_s,
                    "chosen": d is chosen,
                }
                for d in options
            ]
        )
        return
    click.echo(f"designs for {rows} rows, max distance {max_distance}, workload {workload}:")
    click.echo(
        f"  {'blocks':>6} {'tables':>6} {'prefix':>7} {'cand/query':>11} {'cand pairs':>11} "
        f"{'bytes/row':>9} {'query ms':>9} {'pairs s':>9} {'load s':>8}"
    )
    for d in options:
        low, high = d.prefix_bits
        bits = f"{low}" if low == high else f"{low}-{high}"
        click.echo(
            f"{'*' if d is chosen else ' '} {d.plan.blocks:>6} {d.tables:>6} {bits:>7} "
            f"{d.candidates_per_query:>11.3g} {d.candidates_per_batch:>11.3g} {d.bytes_per_row:>9.0f} "
            f"{d.online_ms:>9.3f} {d.batch_s:>9.3g} {d.load_s:>8.3g}"
        )
    click.echo(
        f"* chosen: {chosen.plan.blocks} blocks ({chosen.tables} tables); costs measured on simdb's "
        "development machine, see simdb/planner.py"
    )


@main.command(name="list")
@json_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List the indexes with their row counts and parameters."""
    with database(ctx) as conn:
        summaries = index.list_indexes(conn)
    if as_json:
        emit_json([summary.as_dict() for summary in summaries])
        return
    if not summaries:
        click.echo("no indexes yet; create one with `simdb create NAME`", err=True)
        return
    click.echo(f"{'name':<20} {'mode':<8} {'rows':>10}  {'features':<8}  parameters")
    for s in summaries:
        click.echo(f"{s.name:<20} {s.mode:<8} {s.rows:>10}  {s.features:<8}  {s.description}")


@main.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def drop(ctx: click.Context, name: str, yes: bool) -> None:
    """Drop index NAME and all its rows."""
    index.check_name(name)
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidParameter(f"dropping index {name!r} needs confirmation", "pass --yes")
        click.confirm(f"Drop index {name} and all its rows?", abort=True)
    with database(ctx) as conn:
        index.drop(conn, name)
    click.echo(f"dropped index {name}")


@main.command(name="ingest")
@click.argument("name")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "format_",
    type=click.Choice(readers.FORMATS),
    default="auto",
    show_default=True,
    help="auto: .jsonl/.ndjson and .csv by extension, folders as text, - as JSONL.",
)
@click.option("--key-field", default="key", show_default=True, help="JSONL/CSV field holding the key.")
@click.option("--text-field", default="text", show_default=True, help="JSONL/CSV field holding the text.")
@click.option("--skip-errors", is_flag=True, help="Skip and count bad records or files instead of stopping.")
@click.option(
    "--batch-size",
    type=click.IntRange(1),
    default=ingest.DEFAULT_BATCH,
    show_default=True,
    help="Documents per transaction.",
)
@click.option(
    "--create",
    "create_missing",
    is_flag=True,
    help="Create the index with default settings if it is missing.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1),
    default=os.cpu_count() or 1,
    show_default="all cores",
    help="Worker processes that fingerprint in parallel.",
)
@json_option
@click.pass_context
def ingest_(
    ctx: click.Context,
    name: str,
    paths: tuple[str, ...],
    format_: str,
    key_field: str,
    text_field: str,
    skip_errors: bool,
    batch_size: int,
    create_missing: bool,
    jobs: int,
    as_json: bool,
) -> None:
    """Fingerprint files, folders, JSONL or CSV (or - for stdin) into index NAME.

    A file's key is its path; JSONL and CSV records give theirs. Re-ingesting a key replaces
    its row, so an interrupted run is completed by running it again.
    """
    from tqdm import tqdm

    readers.Options(format_, key_field, text_field, skip_errors)  # check the options first
    readers.check_sources(paths)
    with database(ctx) as conn:
        target = index.get_or_create(conn, name) if create_missing else index.get(conn, name)
        options = readers.Options(format_, key_field, text_field, skip_errors, raw=target.features.binary)
        total = readers.total_size(paths)
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc=f"ingest {name}",
            disable=not sys.stderr.isatty(),
            file=sys.stderr,
        ) as bar:
            documents = readers.read(paths, options)
            report = ingest.ingest(
                conn, target, documents, batch_size=batch_size, progress=bar.update, jobs=jobs
            )
    if as_json:
        emit_json(report.as_dict())
    else:
        click.echo(report.summary())


@main.command(name="grant")
@click.argument("name")
@click.option("--reader", "readers_", multiple=True, metavar="ROLE", help="May query the index (repeatable).")
@click.option(
    "--writer", "writers", multiple=True, metavar="ROLE", help="May also ingest and delete (repeatable)."
)
@click.pass_context
def grant_(ctx: click.Context, name: str, readers_: tuple[str, ...], writers: tuple[str, ...]) -> None:
    """Let database roles query index NAME (--reader) or also write it (--writer), and nothing more."""
    if not readers_ and not writers:
        raise click.UsageError("give at least one --reader ROLE or --writer ROLE")
    with database(ctx) as conn:
        for role in readers_:
            index.grant(conn, name, role)
        for role in writers:
            index.grant(conn, name, role, writer=True)
    granted = [f"{role} (reader)" for role in readers_] + [f"{role} (writer)" for role in writers]
    click.echo(f"granted index {name} to {', '.join(granted)}")


@main.command(name="delete")
@click.argument("name")
@click.argument("keys", nargs=-1, required=True)
@click.pass_context
def delete_(ctx: click.Context, name: str, keys: tuple[str, ...]) -> None:
    """Remove the rows of KEYS from index NAME (in one transaction)."""
    with database(ctx) as conn:
        removed = ingest.delete(conn, index.get(conn, name), keys)
    click.echo(f"deleted {removed} of {len(set(keys))} keys")


@main.command(name="prune")
@click.argument("name")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    metavar="DURATION",
    help="Remove rows last written longer ago than this: 90s, 15m, 12h, 30d, 2w, 1d12h.",
)
@click.pass_context
def prune_(ctx: click.Context, name: str, older_than: str) -> None:
    """Remove the rows of index NAME that were last written more than DURATION ago."""
    age = ingest.parse_duration(older_than)
    with database(ctx) as conn:
        removed = ingest.prune(conn, index.get(conn, name), age)
    click.echo(f"pruned {removed} rows older than {age}")


def _query_document(
    conn: connection.Connection,
    target: index.Index,
    text: str | None,
    file: str | None,
    hex_value: str | None,
    key: str | None,
) -> query.Stored:
    """The query's sketch, and its size and extension where it has them (--file, --key)."""
    if hex_value is not None:
        if not isinstance(target, index.SimhashIndex):
            raise InvalidParameter(
                f"--fingerprint does not apply to {target.mode} index {target.name!r}",
                "query it with --text, --file or --key",
            )
        return query.Stored(parse_hex(hex_value), None, None)
    if key is not None:
        found = query.stored(conn, target, key)
        if found is None:
            raise InputError(f"index {target.name!r} has no key {key!r}", "check the key, e.g. with SQL")
        return found
    if file is not None:
        document = readers.read_document(file, raw=target.features.binary)
        value = _sketch_of(target.sketch, document.content, file, target.features)
        return query.Stored(value, document.size, document.extension)
    return query.Stored(_sketch_of(target.sketch, str(text), "--text", target.features), None, None)


def _sketch_of(make: Callable[[str | bytes], T], content: str | bytes, source: str, features: Features) -> T:
    """The fingerprint or signature of --text or a --file's content, or a one-line error if it has none."""
    try:
        return make(content)
    except EmptyDocument as error:
        what = "is empty" if features.binary else "has no word characters"
        raise InputError(
            f"{source} {what}, so it has no fingerprint", "give a document with some text"
        ) from error


def _exactly_one(**given: object) -> None:
    chosen = [name for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in given)
        raise click.UsageError(f"give exactly one of {flags}")


def cutoff_options(function: F) -> F:
    """--max-distance (simhash indexes) and --threshold (jaccard indexes) of a search."""
    function = click.option(
        "--threshold",
        type=float,
        default=None,
        help="jaccard index: minimum estimated Jaccard similarity. Default: the index's own (its lowest).",
    )(function)
    return click.option(
        "--max-distance",
        "-k",
        type=int,
        default=None,
        help="simhash index: maximum Hamming distance. Default: the index's own (its maximum).",
    )(function)


@main.command(name="query")
@click.argument("name")
@click.option("--text", help="Query with this text.")
@click.option("--file", type=str, help="Query with this file's text.")
@click.option(
    "--fingerprint", "hex_value", metavar="HEX", help="Query with a fingerprint (16 hex digits; simhash)."
)
@click.option("--key", help="Query with the fingerprint or signature stored under this key.")
@cutoff_options
@click.option("--same-extension", is_flag=True, help="Only rows with the query file's extension.")
@click.option(
    "--size-ratio", type=float, metavar="R", help="Only rows within a factor R of the query's size."
)
@json_option
@click.pass_context
def query_(
    ctx: click.Context,
    name: str,
    text: str | None,
    file: str | None,
    hex_value: str | None,
    key: str | None,
    max_distance: int | None,
    threshold: float | None,
    same_extension: bool,
    size_ratio: float | None,
    as_json: bool,
) -> None:
    """Rows of index NAME near a document, fingerprint or stored key, nearest first.

    simhash index: within a Hamming distance; jaccard index: at or above an estimated Jaccard.
    """
    _exactly_one(text=text, file=file, fingerprint=hex_value, key=key)
    if (same_extension or size_ratio is not None) and file is None and key is None:
        raise click.UsageError("--same-extension and --size-ratio need --file or --key")
    with database(ctx) as conn:
        target = index.get(conn, name)
        cutoff = target.cutoff(max_distance, threshold)
        document = _query_document(conn, target, text, file, hex_value, key)
        filters = query.Filters(same_extension, document.extension, document.size, size_ratio)
        matches = query.near(conn, target, document.sketch, max_distance, filters, min_similarity=threshold)
    if as_json:
        emit_json([match.as_dict() for match in matches])
        return
    if not matches:
        of = f" of {to_hex(int(document.sketch))}" if isinstance(target, index.SimhashIndex) else ""
        click.echo(f"no rows {target.describe_cutoff(cutoff)}{of}", err=True)
        return
    if isinstance(target, index.SimhashIndex):
        click.echo(f"{'distance':>8}  {'similarity':>10}  key")
    else:
        click.echo(f"{'similarity':>10}  key")
    for match in matches:
        distance = "" if match.distance is None else f"{match.distance:>8}  "
        click.echo(f"{distance}{match.similarity:>10.3f}  {match.key}")


def _writer(format_: str, header: tuple[str, ...]) -> Callable[[tuple[object, ...]], None]:
    """A row printer for --format csv (with a header line) or jsonl."""
    if format_ == "jsonl":
        return lambda row: click.echo(json.dumps(dict(zip(header, row, strict=True)), ensure_ascii=False))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(header)
    return lambda row: out.writerow(row)


format_option = click.option(
    "--format", "format_", type=click.Choice(["csv", "jsonl"]), default="csv", show_default=True
)


@main.command(name="pairs")
@click.argument("name")
@cutoff_options
@click.option("--same-extension", is_flag=True, help="Only pairs of files with the same extension.")
@click.option("--size-ratio", type=float, metavar="R", help="Only pairs whose sizes are within a factor R.")
@format_option
@click.pass_context
def pairs_(
    ctx: click.Context,
    name: str,
    max_distance: int | None,
    threshold: float | None,
    same_extension: bool,
    size_ratio: float | None,
    format_: str,
) -> None:
    """Every pair of near-duplicate rows of index NAME, each once (key_a < key_b).

    simhash: key_a,key_b,distance, by joining each permuted column with itself on its prefix;
    jaccard: key_a,key_b,similarity, by joining each band-key column with itself. Streamed.
    """
    with database(ctx) as conn:
        target = index.get(conn, name)
        target.cutoff(max_distance, threshold)
        score = target.score_column  # distance (simhash) or similarity (jaccard)
        write = _writer(format_, ("key_a", "key_b", score))
        found = batch.pairs(
            conn,
            target,
            max_distance,
            min_similarity=threshold,
            same_extension=same_extension,
            size_ratio=size_ratio,
        )
        for pair in found:
            write((pair.key_a, pair.key_b, getattr(pair, score)))


@main.command(name="clusters")
@click.argument("name")
@cutoff_options
@json_option
@click.pass_context
def clusters_(
    ctx: click.Context, name: str, max_distance: int | None, threshold: float | None, as_json: bool
) -> None:
    """Group the near-duplicates of index NAME into clusters (connected components of the pairs).

    The result is stored in simdb."NAME__clusters" (key, cluster, and max_distance or
    min_similarity), so SQL can join cluster numbers to keys; keys without a near-duplicate are
    not listed.
    """
    with database(ctx) as conn:
        target = index.get(conn, name)
        found = batch.clusters(conn, target, max_distance, min_similarity=threshold)
    if as_json:
        emit_json(
            {
                "clusters": len(found.groups),
                "keys": found.keys,
                "pairs": found.pairs,
                target.cutoff_column: found.cutoff,
                "table": f"simdb.{name}__clusters",
            }
        )
        return
    click.echo(f"{found.summary()}; stored in simdb.{name}__clusters")


@main.command(name="dedup")
@click.argument("name")
@click.option(
    "--keep",
    type=click.Choice(batch.KEEP_RULES),
    required=True,
    help="Which member of each cluster to keep: first/last added, shortest/longest text.",
)
@cutoff_options
@format_option
@click.pass_context
def dedup_(
    ctx: click.Context,
    name: str,
    keep: str,
    max_distance: int | None,
    threshold: float | None,
    format_: str,
) -> None:
    """One representative per cluster of index NAME, and the keys to drop (action keep|drop)."""
    kept = dropped = 0
    with database(ctx) as conn:
        target = index.get(conn, name)
        target.cutoff(max_distance, threshold)
        write = _writer(format_, ("cluster", "key", "action"))
        for decision in batch.dedup(conn, target, keep, max_distance, min_similarity=threshold):
            write((decision.cluster, decision.key, "keep" if decision.keep else "drop"))
            kept += decision.keep
            dropped += not decision.keep
    click.echo(f"{kept} clusters: keep {kept} keys, drop {dropped}", err=True)


@main.command(name="fingerprint")
@click.option("--text", help="Fingerprint this text.")
@click.option("--file", type=str, help="Fingerprint this file's text.")
@click.option(
    "--mode",
    type=click.Choice(index.MODES),
    default="simhash",
    show_default=True,
    help="simhash: 16 hex digits; jaccard: the MinHash signature as a bigint[] literal for SQL.",
)
@click.option(
    "--permutations",
    type=int,
    default=DEFAULT_PERMUTATIONS,
    show_default=True,
    help="jaccard: signature length (use the index's own).",
)
@features_option
def fingerprint_(text: str | None, file: str | None, mode: str, permutations: int, features: str) -> None:
    """Print the 64-bit SimHash (spec v1) of a text, or its MinHash signature (spec v1).

    The signature is printed as a PostgreSQL array of signed bigints, ready for
    simdb.similar('NAME', '{...}') or an INSERT into a jaccard index.
    """
    _exactly_one(text=text, file=file)
    parsed = Features.parse(features)
    content = readers.read_document(file, raw=parsed.binary).content if file is not None else str(text)
    source = file or "--text"
    if mode == "simhash":
        click.echo(to_hex(_sketch_of(lambda c: fingerprint(c, parsed), content, source, parsed)))
        return
    values = _sketch_of(lambda c: document_signature(c, parsed, permutations), content, source, parsed)
    click.echo("{" + ",".join(str(to_signed(int(v))) for v in values) + "}")


@main.command(name="calibrate")
@click.argument("paths", nargs=-1, required=True)
@features_option
@click.option(
    "--sample", type=click.IntRange(2), default=20_000, show_default=True, help="Documents to read."
)
@click.option(
    "--threshold",
    type=click.Choice(["0.8", "0.9", "0.95"]),
    default="0.9",
    show_default=True,
    help="The Jaccard similarity that counts as a near-duplicate for the recommendation.",
)
@click.option(
    "--recall",
    "wanted",
    type=click.FloatRange(0, 1),
    default=0.9,
    show_default=True,
    help="The recall the recommended k must reach.",
)
@json_option
def calibrate_(
    paths: tuple[str, ...], features: str, sample: int, threshold: str, wanted: float, as_json: bool
) -> None:
    """How well distance <= k finds your near-duplicates: precision and recall against exact Jaccard.

    Reads text files, folders, JSONL or CSV as `simdb ingest` does (no database needed), computes
    the exact shingle Jaccard of every pair above 0.8 and the SimHash distance of every pair within
    8 bits, and recommends the smallest k that reaches the wanted recall.
    """
    from simdb import calibrate

    readers.check_sources(paths)
    documents = (
        item
        for item in readers.read(paths, readers.Options(skip_errors=True))
        if isinstance(item, readers.Document)
    )
    result = calibrate.calibrate(documents, Features.parse(features), sample)
    chosen = float(threshold)
    k = result.recommend(chosen, wanted)
    if as_json:
        emit_json(
            {
                "documents": result.documents,
                "features": result.features,
                "similar_pairs": {str(t): n for t, n in result.similar.items()},
                "close_pairs": result.close,
                "precision": {str(t): v for t, v in result.precision.items()},
                "recall": {str(t): v for t, v in result.recall.items()},
                "recommended_k": k,
                "jaccard_mode": {
                    str(t): {"precision": p, "recall": r} for t, (p, r) in result.jaccard_mode.items()
                },
            }
        )
        return
    click.echo(
        f"{result.documents} documents, features {result.features}; pairs with Jaccard >= "
        + ", ".join(f"{t}: {n}" for t, n in result.similar.items())
    )
    click.echo(f"{'k':>2} {'pairs':>8}  " + "  ".join(f"J>={t:<4} prec  rec" for t in calibrate.THRESHOLDS))
    for distance in range(calibrate.MAX_K + 1):
        cells = "  ".join(
            f"{'':4}{result.precision[t][distance]:>6.3f} {result.recall[t][distance]:>5.3f}"
            for t in calibrate.THRESHOLDS
        )
        click.echo(f"{distance:>2} {result.close[distance]:>8}  {cells}")
    click.echo(
        "jaccard mode (a jaccard index with --threshold t): "
        + "; ".join(f"J>={t}: precision {p:.3f} recall {r:.3f}" for t, (p, r) in result.jaccard_mode.items())
    )
    if k is not None:
        click.echo(
            f"recommended: --max-distance {k} (the smallest k with recall >= {wanted} at Jaccard >= {chosen})"
        )
    else:
        click.echo(
            f"no k up to {calibrate.MAX_K} reaches recall {wanted} at Jaccard >= {chosen}: 64-bit SimHash "
            f"finds close copies, not looser similarity; use --mode jaccard --threshold {chosen}"
        )


@main.command(name="bench")
@click.option(
    "--mode",
    type=click.Choice(index.MODES),
    default="simhash",
    show_default=True,
    help="simhash: random fingerprints at scale; jaccard: both modes side by side on real text "
    "with planted edits (--corpus), scored against exact Jaccard.",
)
@click.option(
    "--rows", type=click.IntRange(1), default=100_000, show_default=True, help="Rows in the scratch index."
)
@click.option("--max-distance", "-k", type=int, default=DEFAULT_MAX_DISTANCE, show_default=True)
@click.option("--queries", type=click.IntRange(1), default=1000, show_default=True, help="Timed queries.")
@click.option(
    "--brute-force-queries",
    type=click.IntRange(0),
    default=20,
    show_default=True,
    help="Queries also answered by a full bit_count scan, for the ratio and recall.",
)
@click.option(
    "--text",
    "text_paths",
    multiple=True,
    metavar="PATH",
    help="Also time fingerprinting of the text files below PATH (repeatable).",
)
@click.option(
    "--hnsw/--no-hnsw",
    default=True,
    show_default=True,
    help="Compare with pgvector's HNSW over bit(64) where the vector extension is available.",
)
@click.option(
    "--corpus",
    "corpus_paths",
    multiple=True,
    metavar="PATH",
    help="jaccard: real text to plant edits in (repeatable). Default: this Python's standard library.",
)
@click.option(
    "--sample", type=click.IntRange(2), default=5000, show_default=True, help="jaccard: documents read."
)
@click.option(
    "--copies",
    type=click.IntRange(0),
    default=2000,
    show_default=True,
    help="jaccard: edited copies planted.",
)
@click.option(
    "--max-edit",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="jaccard: largest share of a copy's words edited (drawn uniformly up to it).",
)
@click.option(
    "--permutations",
    type=click.IntRange(2, 1024),
    default=DEFAULT_PERMUTATIONS,
    show_default=True,
    help="jaccard: MinHash signature length of the jaccard index.",
)
@click.option(
    "--padding-rows",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="jaccard: random rows bulk-loaded into both indexes first, to measure at scale.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_THRESHOLD,
    show_default=True,
    help="jaccard: the Jaccard similarity that counts as a near-duplicate.",
)
@features_option
@json_option
@click.pass_context
def bench_(
    ctx: click.Context,
    mode: str,
    rows: int,
    max_distance: int,
    queries: int,
    brute_force_queries: int,
    text_paths: tuple[str, ...],
    hnsw: bool,
    corpus_paths: tuple[str, ...],
    sample: int,
    copies: int,
    max_edit: float,
    permutations: int,
    padding_rows: int,
    threshold: float,
    features: str,
    as_json: bool,
) -> None:
    """Measure an index on a scratch copy and print the figures with the machine and sizes.

    \b
    --mode simhash: load, build, query latency, all pairs and recall on random fingerprints,
      each with a comparison run in the same process (a brute-force bit_count scan, a bare round
      trip, pgvector's HNSW where available); recall against the exact answer from numpy.
    --mode jaccard: a jaccard and a simhash index over the same real text with planted word
      edits: precision and recall against exact Jaccard, bytes/row, load, query and pairs time.
    Scratch indexes are dropped afterwards. With --text, also measure fingerprinting MB/s on
    one core against the straightforward per-shingle method.
    """
    from simdb import bench

    fingerprinting = None
    if text_paths:
        readers.check_sources(text_paths)
        fingerprinting = bench.bench_fingerprint(text_paths, Features.parse(features))
    chatty = sys.stderr.isatty() and not as_json  # progress lines on a terminal only
    say = (lambda line: click.echo(f"... {line}", err=True)) if chatty else (lambda line: None)
    if mode == "jaccard":
        settings = {
            "threshold": threshold,
            "permutations": permutations,
            "max_distance": max_distance,
            "sample": sample,
            "copies": copies,
            "max_edit": max_edit,
            "queries": queries,
            "padding_rows": padding_rows,
        }
        _bench_modes(ctx, corpus_paths, settings, say, as_json)
        return
    with database(ctx) as conn:
        measured = bench.bench_index(
            conn,
            hnsw=hnsw,
            rows=rows,
            max_distance=max_distance,
            queries=queries,
            brute_force_queries=brute_force_queries,
            progress=say,
        )
    if as_json:
        report = measured.as_dict()
        if fingerprinting is not None:
            report["fingerprint"] = fingerprinting.as_dict()
        emit_json(report)
        return
    click.echo(bench.format_report(measured, fingerprinting))


def _bench_modes(
    ctx: click.Context,
    corpus_paths: tuple[str, ...],
    settings: dict[str, Any],
    say: Callable[[str], None],
    as_json: bool,
) -> None:
    """simdb bench --mode jaccard: both modes on one corpus with planted edits."""
    import sysconfig

    from simdb import evaluate

    paths = corpus_paths or (sysconfig.get_paths()["stdlib"],)
    readers.check_sources(paths)
    documents = (
        item
        for item in readers.read(paths, readers.Options(skip_errors=True))
        if isinstance(item, readers.Document)
    )
    with database(ctx) as conn:
        result = evaluate.evaluate(conn, documents, jobs=os.cpu_count() or 1, progress=say, **settings)
    if as_json:
        emit_json(result.as_dict())
    else:
        click.echo(evaluate.format_evaluation(result))


@main.group()
def db() -> None:
    """The embedded PostgreSQL server (used when no DSN is given); data in SIMDB_HOME."""


@db.command()
@json_option
def status(as_json: bool) -> None:
    """Say whether the embedded server runs, where, and its URL."""
    state = embedded.EmbeddedServer().status()
    if as_json:
        emit_json(
            {
                "running": state.running,
                "pid": state.pid,
                "home": str(state.home),
                "url": state.url,
                "version": state.version,
                "stale_pid_file": state.stale_pid_file,
            }
        )
        return
    word = f"running (pid {state.pid})" if state.running else "stopped"
    if state.stale_pid_file:
        word += " (a stale pid file from a killed server is left; `simdb db start` clears it)"
    click.echo(f"embedded PostgreSQL {state.version or '(not initialised)'}: {word}")
    click.echo(f"home: {state.home}")
    click.echo(f"url:  {state.url}")


@db.command()
def start() -> None:
    """Start the embedded server (initialising it on first use) and print its URL."""
    click.echo(embedded.EmbeddedServer().start())


@db.command()
def stop() -> None:
    """Stop the embedded server."""
    stopped = embedded.EmbeddedServer().stop()
    click.echo("stopped" if stopped else "was not running")


@db.command()
def url() -> None:
    """Print the embedded server's URL (for psql or your application)."""
    click.echo(embedded.EmbeddedServer().url())


def run(args: list[str] | None = None) -> None:
    """Entry point: simdb's errors become one line with a hint, never a traceback."""
    try:
        main.main(args=args, prog_name="simdb", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except SimdbError as error:
        click.echo(f"simdb: error: {error}", err=True)
        sys.exit(1)
    except psycopg.OperationalError as error:
        click.echo(f"simdb: error: {DatabaseUnavailable(_first_line(error), _RERUN)}", err=True)
        sys.exit(1)
    except psycopg.Error as error:
        click.echo(f"simdb: error: the database refused: {_first_line(error)} ({_ROLLED_BACK})", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo(f"simdb: interrupted ({_RERUN})", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


_ROLLED_BACK = "the failed statement's transaction was rolled back; work committed before it is kept"
_RERUN = "batches already committed are kept; running the same command again completes the work"


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


if __name__ == "__main__":
    run()
