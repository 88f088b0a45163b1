"""Searching an index: query, pairs, clusters, dedup; and fingerprint, which needs no index."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping
from typing import Any

import click
from click.core import ParameterSource

from simdb import duplicates, query
from simdb.cli.common import (
    bits_option,
    counter,
    cutoff_options,
    database,
    dsn_option,
    emit_json,
    exactly_one,
    features_option,
    fingerprint_spec_option,
    format_choice,
    format_option,
    json_option,
    pairing_jobs_option,
    row_writer,
    show,
    signature_spec_option,
    sketch_of,
    spec_from_options,
    text_options,
)
from simdb.db import connection
from simdb.errors import InputError
from simdb.index import lifecycle as indexes
from simdb.index import modes
from simdb.index.modes import Index
from simdb.sketch.features import Features
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD


def _query_document(
    conn: connection.Connection,
    target: Index,
    text: str | None,
    file: str | None,
    hex_value: str | None,
    key: str | None,
) -> query.Stored:
    """The query's sketch, and its size and extension where it has them (--file, --key)."""
    if hex_value is not None:
        return query.Stored(target.parse_sketch(hex_value), None, None)
    if key is not None:
        found = query.stored(conn, target, key)
        if found is None:
            raise InputError(f"index {target.name!r} has no key {key!r}", _key_hint(key))
        return found
    if file is not None:
        from simdb.sources import readers  # (a query by text or fingerprint reads no file)

        document = readers.read_document(file, raw=target.features.binary)
        source = "stdin" if file == readers.STDIN else file
        value = sketch_of(target.sketch, document.content, source, target.features)
        return query.Stored(value, document.size, document.extension)
    return query.Stored(sketch_of(target.sketch, str(text), "--text", target.features), None, None)


@click.command(name="query")
@click.argument("name")
@text_options("Query with")
@click.option(
    "--fingerprint",
    "hex_value",
    metavar="HEX",
    help="Query with a fingerprint (simhash: up to 16 hex digits, 32 for a 128-bit index, optionally "
    "after 0x; fewer are zero-padded on the left). simdb.from_hex reads the same in SQL.",
)
@click.option("--key", help="Query with the fingerprint or signature stored under this key.")
@cutoff_options
@click.option("--same-extension", is_flag=True, help="Only rows with the query file's extension.")
@click.option(
    "--size-ratio", type=float, metavar="R", help="Only rows within a factor R of the query's size."
)
@click.option("--limit", type=click.IntRange(1), help="At most N rows, the nearest.", metavar="N")
@format_choice(
    ["table", "csv", "jsonl"],
    "table",
    "table for people; csv (with a header) or jsonl, one row per line, for other tools.",
)
@json_option
@dsn_option
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
    limit: int | None,
    format_: str,
    as_json: bool,
) -> None:
    """Rows of index NAME near a document, fingerprint or stored key, nearest first.

    simhash index: within a Hamming distance; jaccard index: at or above an estimated Jaccard.
    """
    exactly_one(text=text, file=file, fingerprint=hex_value, key=key)
    if (same_extension or size_ratio is not None) and file is None and key is None:
        raise click.UsageError("--same-extension and --size-ratio need --file or --key")
    with database(ctx) as conn:
        target = indexes.get(conn, name)
        cutoff = target.cutoff(max_distance, threshold)
        document = _query_document(conn, target, text, file, hex_value, key)
        filters = query.Filters(same_extension, document.extension, document.size, size_ratio)
        matches = query.near(
            conn, target, document.sketch, max_distance, filters, min_similarity=threshold, limit=limit
        )
        alone = not as_json and format_ == "table" and all(match.key == key for match in matches)
        beyond = query.nearest(conn, target, document.sketch, key) if alone else None
    if format_ != "table" and not as_json:
        with row_writer(format_, ("key", target.score_column)) as write:
            for match in matches:
                write((match.key, getattr(match, target.score_column)))
        return
    if not matches and not as_json:
        click.echo(
            f"no rows {target.describe_cutoff(cutoff)}{target.describe_sketch(document.sketch)}", err=True
        )
    else:
        show(query.Answer(matches), as_json)
    if beyond is not None and beyond.jaccard >= HINT_JACCARD:
        click.echo(_beyond_reach(name, target, beyond), err=True)


HINT_JACCARD = 0.5  # query says where the nearest row beyond reach is when it is at least this close


def _beyond_reach(name: str, target: Index, beyond: query.Nearest) -> str:
    """What `query` says when nothing else is within reach but a row is close by its estimate."""
    threshold = max(HINT_JACCARD, math.floor(beyond.jaccard * 10) / 10)
    return (
        f"the nearest other row is {beyond.key} at {target.score_column} {beyond.score}, about Jaccard "
        f"{beyond.jaccard:.2f}: beyond the reach of index {name} (it {target.finds}); a jaccard index "
        f"finds such pairs (simdb create {name}_j --mode jaccard --threshold {threshold:g})"
    )


@click.command(name="pairs")
@click.argument("name")
@cutoff_options
@click.option("--same-extension", is_flag=True, help="Only pairs of files with the same extension.")
@click.option("--size-ratio", type=float, metavar="R", help="Only pairs whose sizes are within a factor R.")
@click.option(
    "--new",
    "new_only",
    is_flag=True,
    help="Only the pairs that involve a row added or changed since this consumer's last --new run "
    "(the first reads every pair and starts tracking changes, as the table's owner).",
)
@click.option(
    "--consumer",
    default="default",
    show_default=True,
    metavar="NAME",
    help="--new: whose mark to read and move (each consumer keeps its own).",
)
@pairing_jobs_option
@format_option
@dsn_option
@click.pass_context
def pairs_(
    ctx: click.Context,
    name: str,
    max_distance: int | None,
    threshold: float | None,
    same_extension: bool,
    size_ratio: float | None,
    new_only: bool,
    consumer: str,
    jobs: int,
    format_: str,
    as_json: bool,
) -> None:
    """Every pair of near-duplicate rows of index NAME, each once (key_a < key_b).

    simhash: key_a,key_b,distance, from each permuted table's prefixes sorted in memory and
    compared run by run (128 bits: a self-join in SQL); jaccard: key_a,key_b,similarity, from
    each band's keys sorted the same way, the estimate computed in SQL. Streamed.
    With --new, the pairs of the rows written since the consumer's last run (a near query for
    each of a few; for more, their prefixes looked up among every row's in memory): its mark
    moves once every pair is printed (an interrupted run moves nothing). simdb.pairs_since reads
    the same in SQL.
    """
    if not new_only and ctx.get_parameter_source("consumer") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--consumer goes with --new")
    with database(ctx) as conn:
        target = indexes.get(conn, name)
        target.cutoff(max_distance, threshold)
        score = target.score_column  # distance (simhash) or similarity (jaccard)
        found = duplicates.pairs(
            conn,
            target,
            max_distance,
            min_similarity=threshold,
            same_extension=same_extension,
            size_ratio=size_ratio,
            jobs=jobs,
            new_for=consumer if new_only else None,
        )
        header = ("key_a", "key_b", score)
        # (closing: a closed pipe ends the pairs' transaction before the connection)
        with (
            contextlib.closing(found),
            row_writer("json" if as_json else format_, header) as write,
            counter(f"pairs {name}", " pairs", streams_rows=True) as done,
        ):
            for pair in found:
                write((pair.key_a, pair.key_b, getattr(pair, score)))
                done(1)


@click.command(name="clusters")
@click.argument("name")
@cutoff_options
@click.option(
    "--new",
    "new_only",
    is_flag=True,
    help="Merge the pairs of the rows added or changed since the clusters were stored into them "
    "(the first run computes them all and starts tracking changes, as the table's owner).",
)
@pairing_jobs_option
@json_option
@dsn_option
@click.pass_context
def clusters_(
    ctx: click.Context,
    name: str,
    max_distance: int | None,
    threshold: float | None,
    new_only: bool,
    jobs: int,
    as_json: bool,
) -> None:
    """Group the near-duplicates of index NAME into clusters (connected components of the pairs).

    The result is stored in simdb."NAME__clusters" (key, cluster, and max_distance or
    min_similarity), so SQL can join cluster numbers to keys; keys without a near-duplicate are
    not listed. With --new, the pairs of the rows written since the clusters were stored (as
    pairs --new finds them) merge into them: clusters only merge (a row rewritten or removed
    since leaves its cluster at the next full run).
    """
    with database(ctx) as conn:
        target = indexes.get(conn, name)
        with counter(f"clusters {name}", " pairs") as done:
            found = duplicates.clusters(
                conn, target, max_distance, min_similarity=threshold, progress=done, new=new_only, jobs=jobs
            )
    show(found, as_json)


@click.command(name="dedup")
@click.argument("name")
@click.option(
    "--keep",
    type=click.Choice(duplicates.KEEP_RULES),
    required=True,
    help="Which member of each cluster to keep: first/last added, shortest/longest text.",
)
@cutoff_options
@format_option
@dsn_option
@click.pass_context
def dedup_(
    ctx: click.Context,
    name: str,
    keep: str,
    max_distance: int | None,
    threshold: float | None,
    format_: str,
    as_json: bool,
) -> None:
    """One representative per cluster of index NAME, and the keys to drop (action keep|drop)."""
    kept = dropped = 0
    with database(ctx) as conn:
        target = indexes.get(conn, name)
        target.cutoff(max_distance, threshold)
        header = ("cluster", "key", "action")
        with (
            counter(f"dedup {name}", " pairs", streams_rows=True) as done,
            contextlib.closing(
                duplicates.dedup(conn, target, keep, max_distance, min_similarity=threshold, progress=done)
            ) as decisions,
            row_writer("json" if as_json else format_, header) as write,
        ):
            for decision in decisions:
                write((decision.cluster, decision.key, "keep" if decision.keep else "drop"))
                kept += decision.keep
                dropped += not decision.keep
    click.echo(f"{kept} clusters: keep {kept} keys, drop {dropped}", err=True)


@click.command(name="export")
@click.argument("name")
@format_option
@dsn_option
@click.pass_context
def export_(ctx: click.Context, name: str, format_: str, as_json: bool) -> None:
    """Every row of index NAME, by key: key, fingerprint or signature, size, extension.

    Streamed in one snapshot. The fingerprint is printed as `simdb fingerprint` prints it, so an
    export loads into another index with `simdb ingest NEW FILE --fingerprint-field fingerprint`.
    """
    with database(ctx) as conn:
        target = indexes.get(conn, name)
        rows = duplicates.export(conn, target)
        header = ("key", target.sketch_column, "size", "extension")
        with contextlib.closing(rows), row_writer("json" if as_json else format_, header) as write:
            for row in rows:
                write(row)


@click.command(name="fingerprint")
@text_options("Fingerprint")
@click.option(
    "--index",
    "index_name",
    metavar="NAME",
    help="As index NAME computes it (its mode, spec, width and features), read from the database: "
    "what to give its SQL functions.",
)
@click.option(
    "--mode",
    type=click.Choice(modes.MODES),
    default=modes.DEFAULT_MODE,
    show_default=True,
    help="simhash: 16 hex digits (32 with --bits 128); jaccard: the MinHash signature as a bigint[] "
    "literal for SQL.",
)
@click.option(
    "--permutations",
    type=int,
    help=f"jaccard: signature length (use the index's own) [default: {DEFAULT_PERMUTATIONS}].",
)
@click.option(
    "--threshold",
    type=float,
    help="jaccard: the index's threshold, which chooses its bands (spec v3 prints their keys) "
    f"[default: {DEFAULT_THRESHOLD}].",
)
@fingerprint_spec_option
@bits_option
@signature_spec_option
@features_option
@json_option
@dsn_option
@click.pass_context
def fingerprint_(
    ctx: click.Context,
    text: str | None,
    file: str | None,
    index_name: str | None,
    mode: str,
    permutations: int | None,
    threshold: float | None,
    fingerprint_spec: int | None,
    bits: int | None,
    signature_spec: int | None,
    features: str,
    as_json: bool,
) -> None:
    """Print the 64-bit fingerprint (one-bit MinHash, spec v3, unless --fingerprint-spec 2 for
    SimHash; --bits 128 for 128 bits) of a text, or its MinHash sketch (spec v3: the band keys for
    --threshold, then a 64-word check).

    The signature is printed as a PostgreSQL array of signed bigints, ready for
    simdb.similar('NAME', '{...}') or an INSERT into a jaccard index.
    """
    exactly_one(text=text, file=file)
    given: dict[str, Any] = {
        "permutations": permutations,
        "threshold": threshold,
        "fingerprint_spec": fingerprint_spec,
        "bits": bits,
        "signature_spec": signature_spec,
    }
    if index_name is None:
        spec, parsed = spec_from_options(mode, given), Features.parse(features)
    else:
        spec, parsed, mode = _index_settings(ctx, index_name, given)
    from simdb.sources import readers  # (loaded by the commands that read files: not by `query --text`)

    content = readers.read_document(file, raw=parsed.binary).content if file is not None else str(text)
    source = "stdin" if file == readers.STDIN else file or "--text"
    printed = spec.literal(sketch_of(lambda c: spec.sketch(c, parsed), content, source, parsed))
    if as_json:  # the field name is the one `simdb export` writes and `ingest --fingerprint-field` reads
        emit_json({"source": source, "mode": mode, modes.index_class(mode).sketch_column: printed})
    else:
        click.echo(printed)


def _index_settings(
    ctx: click.Context, name: str, given: Mapping[str, object]
) -> tuple[modes.Spec, Features, str]:
    """fingerprint --index NAME: the index's spec, features and mode; an option that would
    contradict them is a usage error."""
    chosen = [key for key, value in given.items() if value is not None]
    chosen += [
        key for key in ("mode", "features") if ctx.get_parameter_source(key) is not ParameterSource.DEFAULT
    ]
    if chosen:
        options = " and ".join(f"--{key.replace('_', '-')}" for key in chosen)
        raise click.UsageError(f"--index takes the index's own settings: leave out {options}")
    with database(ctx) as conn:
        index = indexes.get(conn, name)
    return index.spec, index.features, index.mode


def _key_hint(key: str) -> str:
    """What to check about a key that is not stored: a relative path is not a file's key."""
    absolute = os.path.abspath(key)
    if os.path.exists(key) and absolute != key:
        return f"a file's key is its absolute path: try --key {absolute}"
    return "check the key, e.g. with SQL"


COMMANDS = [query_, pairs_, clusters_, dedup_, export_, fingerprint_]
