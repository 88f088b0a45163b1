"""Searching an index: query, pairs, clusters, dedup; and fingerprint, which needs no index."""

from __future__ import annotations

import contextlib

import click

from simdb import batch, connection, index, modes, query, readers
from simdb.cli.common import (
    bits_option,
    cutoff_options,
    database,
    exactly_one,
    features_option,
    fingerprint_spec_option,
    format_option,
    json_option,
    row_writer,
    show,
    signature_spec_option,
    sketch_of,
    spec_from_options,
)
from simdb.errors import InputError
from simdb.minhash import DEFAULT_PERMUTATIONS
from simdb.modes import Index
from simdb.simhash import Features


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
            raise InputError(f"index {target.name!r} has no key {key!r}", "check the key, e.g. with SQL")
        return found
    if file is not None:
        document = readers.read_document(file, raw=target.features.binary)
        value = sketch_of(target.sketch, document.content, file, target.features)
        return query.Stored(value, document.size, document.extension)
    return query.Stored(sketch_of(target.sketch, str(text), "--text", target.features), None, None)


@click.command(name="query")
@click.argument("name")
@click.option("--text", help="Query with this text.")
@click.option("--file", type=str, help="Query with this file's text.")
@click.option(
    "--fingerprint",
    "hex_value",
    metavar="HEX",
    help="Query with a fingerprint (simhash: 16 hex digits, 32 for a 128-bit index).",
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
    exactly_one(text=text, file=file, fingerprint=hex_value, key=key)
    if (same_extension or size_ratio is not None) and file is None and key is None:
        raise click.UsageError("--same-extension and --size-ratio need --file or --key")
    with database(ctx) as conn:
        target = index.get(conn, name)
        cutoff = target.cutoff(max_distance, threshold)
        document = _query_document(conn, target, text, file, hex_value, key)
        filters = query.Filters(same_extension, document.extension, document.size, size_ratio)
        matches = query.near(conn, target, document.sketch, max_distance, filters, min_similarity=threshold)
    if not matches and not as_json:
        click.echo(
            f"no rows {target.describe_cutoff(cutoff)}{target.describe_sketch(document.sketch)}", err=True
        )
        return
    show(query.Answer(matches), as_json)


@click.command(name="pairs")
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
        write = row_writer(format_, ("key_a", "key_b", score))
        found = batch.pairs(
            conn,
            target,
            max_distance,
            min_similarity=threshold,
            same_extension=same_extension,
            size_ratio=size_ratio,
        )
        with contextlib.closing(found):  # (a closed pipe ends its transaction before the connection)
            for pair in found:
                write((pair.key_a, pair.key_b, getattr(pair, score)))


@click.command(name="clusters")
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
    show(found, as_json)


@click.command(name="dedup")
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
        write = row_writer(format_, ("cluster", "key", "action"))
        decisions = batch.dedup(conn, target, keep, max_distance, min_similarity=threshold)
        with contextlib.closing(decisions):
            for decision in decisions:
                write((decision.cluster, decision.key, "keep" if decision.keep else "drop"))
                kept += decision.keep
                dropped += not decision.keep
    click.echo(f"{kept} clusters: keep {kept} keys, drop {dropped}", err=True)


@click.command(name="fingerprint")
@click.option("--text", help="Fingerprint this text.")
@click.option("--file", type=str, help="Fingerprint this file's text.")
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
    default=None,
    help=f"jaccard: signature length (use the index's own) [default: {DEFAULT_PERMUTATIONS}].",
)
@fingerprint_spec_option
@bits_option
@signature_spec_option
@features_option
def fingerprint_(
    text: str | None,
    file: str | None,
    mode: str,
    permutations: int | None,
    fingerprint_spec: int | None,
    bits: int | None,
    signature_spec: int | None,
    features: str,
) -> None:
    """Print the 64-bit SimHash (spec v2 unless --fingerprint-spec 1; --bits 128 for 128 bits) of
    a text, or its MinHash signature (spec v2: the signature, then its 64-word check).

    The signature is printed as a PostgreSQL array of signed bigints, ready for
    simdb.similar('NAME', '{...}') or an INSERT into a jaccard index.
    """
    exactly_one(text=text, file=file)
    parsed = Features.parse(features)
    content = readers.read_document(file, raw=parsed.binary).content if file is not None else str(text)
    source = file or "--text"
    given = {
        "permutations": permutations,
        "fingerprint_spec": fingerprint_spec,
        "bits": bits,
        "signature_spec": signature_spec,
    }
    spec = spec_from_options(mode, given)
    click.echo(spec.literal(sketch_of(lambda c: spec.sketch(c, parsed), content, source, parsed)))


COMMANDS = [query_, pairs_, clusters_, dedup_, fingerprint_]
