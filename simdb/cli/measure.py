"""Measuring: calibrate (on the user's own documents, no database) and bench."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import click

from simdb.cli.common import (
    Result,
    database,
    dsn_option,
    features_option,
    fingerprint_spec_option,
    json_option,
    planned_distance,
    progress_say,
    shards_option,
    show,
    text_documents,
)
from simdb.index import modes
from simdb.index.modes import SimhashSpec
from simdb.sketch.features import Features
from simdb.sketch.minhash import DEFAULT_PERMUTATIONS, DEFAULT_THRESHOLD
from simdb.sources import readers


@click.command(name="calibrate")
@click.argument("paths", nargs=-1, required=True)
@features_option
@click.option(
    "--sample",
    type=click.IntRange(2),
    default=20_000,
    show_default=True,
    help="Documents to measure: a uniform random sample of all read (all, if fewer).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The sample's random seed.")
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
    paths: tuple[str, ...],
    features: str,
    sample: int,
    seed: int,
    threshold: str,
    wanted: float,
    as_json: bool,
) -> None:
    """How well distance <= k finds your near-duplicates: precision and recall against exact Jaccard.

    Reads text files, folders, JSONL or CSV as `simdb ingest` does (no database needed), computes
    the exact shingle Jaccard of every pair above 0.8 and the SimHash distance of every pair within
    8 bits, and recommends the smallest k that reaches the wanted recall.
    """
    from simdb.measure import calibrate

    documents = text_documents(paths)
    result = calibrate.calibrate(
        documents, Features.parse(features), sample, float(threshold), wanted, seed, progress_say(as_json)
    )
    show(result, as_json)


_PAIRS_LIMIT = (
    "Seconds after which simdb.pairs in SQL and the hand-written table's self-joins are stopped "
    "(and reported so): at 100M rows they compare ~10^11 candidates, hours."
)


@click.command(name="bench")
@click.option(
    "--mode",
    type=click.Choice(modes.MODES),
    default="simhash",
    show_default=True,
    help="simhash: random fingerprints at scale; jaccard: both modes side by side on real text "
    "with planted edits (--corpus), scored against exact Jaccard.",
)
@click.option(
    "--rows", type=click.IntRange(1), default=100_000, show_default=True, help="Rows in the scratch index."
)
@planned_distance("The scratch index's k: its probes find every row within this distance.")
@click.option("--queries", type=click.IntRange(1), default=1000, show_default=True, help="Timed queries.")
@click.option("--pairs-limit", type=click.FloatRange(1), default=300.0, show_default=True, help=_PAIRS_LIMIT)
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
    help="Also time fingerprints and signatures of the text files below PATH on one core, beside "
    "the code before the kernels and the textbook method (repeatable).",
)
@click.option(
    "--hnsw/--no-hnsw",
    default=True,
    show_default=True,
    help="Compare with pgvector's HNSW over bit(64) where the vector extension is available.",
)
@click.option(
    "--new-pairs/--no-new-pairs",
    default=True,
    show_default=True,
    help="Add 1%% more rows and time `pairs --new` beside a full run (at 100M rows: 1M rows stored"
    " one batch at a time, and two more all-pairs runs).",
)
@click.option(
    "--corpus",
    "corpus_paths",
    multiple=True,
    metavar="PATH",
    help="jaccard: real text to plant edits in (repeatable). Default: this Python's standard library.",
)
@click.option(
    "--sample",
    type=click.IntRange(2),
    default=5000,
    show_default=True,
    help="jaccard: documents read; --edits: files drawn per size band (default 300).",
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
@click.option(
    "--quality",
    "quality_paths",
    multiple=True,
    metavar="PATH[:PATH...]",
    help="Sketch quality instead: precision / recall of each fingerprint spec, a plain set-weighted "
    "SimHash and the jaccard mode against exact Jaccard on the documents below PATH, one corpus "
    "per option (paths joined by ':' form one corpus; repeatable; no database needed).",
)
@click.option(
    "--planted",
    "planted_paths",
    multiple=True,
    metavar="PATH",
    help="With --quality: also a corpus of the text below PATH with planted word edits "
    "(--sample, --copies, --max-edit).",
)
@click.option(
    "--edits",
    "edits_path",
    metavar="FOLDER",
    help="Planted single edits instead: a word, a line, a sentence, 3 words, 1% of words, a "
    "paragraph moved, a reflow, planted in --sample files (default 300) per size band of the text "
    "below FOLDER; recall by kind and band and precision at Jaccard >= --threshold (default 0.5) of "
    "SimHash, one-bit MinHash and the jaccard mode (--seed; no database needed).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="--edits: the random seed.")
@click.option(
    "--distributed",
    is_flag=True,
    help="On a Citus coordinator: the same rows on one server, distributed by key and by prefix, "
    "side by side (bytes, load, latency, throughput at 1, 4 and 16 clients, all pairs).",
)
@shards_option("--distributed")
@click.option(
    "--app-table",
    is_flag=True,
    help="An application's table of --rows ~2 KB texts with the index in its own column: first "
    "fill against ingest, near against simdb's own table and a query by hand, the triggers' cost "
    "to single-row writes, syncs, and the lag of sync --watch.",
)
@click.option(
    "--writes-per-second",
    type=click.FloatRange(0.1),
    help="--app-table: measure the lag of sync --watch while the application commits this many "
    "single-row INSERTs a second, for 20 s [default: one commit at a time, 200 of them].",
)
@fingerprint_spec_option
@features_option
@json_option
@dsn_option
@click.pass_context
def bench_(ctx: click.Context, /, mode: str, as_json: bool, **options: Any) -> None:
    """Measure an index on a scratch copy and print the figures with the machine and sizes.

    \b
    --mode simhash: load, build, query latency, all pairs and recall on random fingerprints,
      each with a comparison run in the same process (a brute-force bit_count scan, a bare round
      trip, pgvector's HNSW where available); recall against the exact answer from numpy.
    --mode jaccard: a jaccard and a simhash index over the same real text with planted word
      edits: precision and recall against exact Jaccard, bytes/row, load, query and pairs time.
    Scratch indexes are dropped afterwards. With --text, also measure fingerprints and
    signatures per core (MB/s) beside the numpy code before the kernels and the textbook method.
    --distributed: on a Citus coordinator, the same random fingerprints in a local index, in one
    distributed by key, and in tables distributed by prefix (Manku's layout), side by side.
    --quality PATH...: sketch quality on your folders (k = 0..6 at 64 bits, 0..16 at 128) against
    exact shingle Jaccard.
    --edits FOLDER: planted single edits (no database): recall by kind of edit and size band,
    precision over all pairs, of SimHash, one-bit MinHash and the jaccard mode.
    """
    if options["edits_path"]:
        show(_bench_edits(ctx, progress_say(as_json), **options), as_json)
        return
    if options["quality_paths"] or options["planted_paths"]:
        show(_bench_quality(progress_say(as_json), **options), as_json)
        return
    given = ctx.get_parameter_source("rows") is not click.core.ParameterSource.DEFAULT
    if mode == "jaccard" and given and not options["distributed"]:
        raise click.UsageError(
            "--rows sizes the random index of --mode simhash; --mode jaccard measures at scale "
            "with --padding-rows N (random rows loaded beside the corpus)"
        )
    runs: dict[str, Callable[..., Result]] = {"simhash": _bench_index, "jaccard": _bench_modes}
    run = _bench_distributed if options["distributed"] else runs[mode]
    if options["app_table"]:
        run = _bench_app_table
    elif options["fingerprint_spec"] is not None:
        raise click.UsageError("--fingerprint-spec applies to --app-table only")
    show(run(ctx, progress_say(as_json), **options), as_json)


def _bench_index(
    ctx: click.Context,
    say: Callable[[str], None],
    *,
    rows: int,
    max_distance: int,
    queries: int,
    brute_force_queries: int,
    pairs_limit: float,
    text_paths: tuple[str, ...],
    hnsw: bool,
    new_pairs: bool,
    features: str,
    **_: Any,
) -> Result:
    """simdb bench --mode simhash: one simhash index at scale, beside its same-run baselines."""
    from simdb.measure import bench

    fingerprinting = None
    if text_paths:
        readers.check_sources(text_paths)
        fingerprinting = bench.bench_fingerprint(text_paths, Features.parse(features))
    with database(ctx, create_schema=True) as conn:
        if fingerprinting is not None:
            say("ingesting the same files end to end with --jobs 1 and 2, into an index of each mode")
            bench.bench_ingest(conn, text_paths, Features.parse(features), fingerprinting, (1, 2))
        measured = bench.bench_index(
            conn,
            hnsw=hnsw,
            new_pairs=new_pairs,
            rows=rows,
            max_distance=max_distance,
            queries=queries,
            brute_force_queries=brute_force_queries,
            pairs_limit_s=pairs_limit,
            progress=say,
        )
    return bench.BenchReport(measured, fingerprinting)


def _bench_distributed(
    ctx: click.Context,
    say: Callable[[str], None],
    *,
    rows: int,
    max_distance: int,
    queries: int,
    shards: int | None,
    **_: Any,
) -> Result:
    """simdb bench --distributed: a local and a distributed index of the same rows, side by side."""
    from simdb.measure import scaleout

    with database(ctx, create_schema=True) as conn:
        return scaleout.bench_placements(
            conn,
            conn.info.dsn,
            rows=rows,
            max_distance=max_distance,
            queries=queries,
            shards=shards,
            progress=say,
        )


def _bench_app_table(
    ctx: click.Context,
    say: Callable[[str], None],
    *,
    rows: int,
    queries: int,
    writes_per_second: float | None,
    fingerprint_spec: int | None,
    max_distance: int,
    **_: Any,
) -> Result:
    """simdb bench --app-table: an index in an application's own table, beside its baselines,
    made as `simdb attach` makes one (-k and --fingerprint-spec as attach takes them)."""
    from simdb.measure import apptable

    given = ctx.get_parameter_source("max_distance") is not click.core.ParameterSource.DEFAULT
    spec = SimhashSpec.newest(fingerprint_spec=fingerprint_spec, max_distance=max_distance if given else None)

    paced = {} if writes_per_second is None else {"lags": max(1, round(writes_per_second * 20))}
    with database(ctx, create_schema=True) as conn:
        return apptable.bench_app_table(
            conn,
            conn.info.dsn,
            rows=rows,
            queries=queries,
            jobs=os.cpu_count() or 1,
            progress=say,
            spec=spec,
            writes_per_second=writes_per_second,
            **paced,
        )


def _bench_modes(
    ctx: click.Context,
    say: Callable[[str], None],
    *,
    corpus_paths: tuple[str, ...],
    threshold: float,
    permutations: int,
    max_distance: int,
    sample: int,
    copies: int,
    max_edit: float,
    queries: int,
    padding_rows: int,
    **_: Any,
) -> Result:
    """simdb bench --mode jaccard: both modes on one corpus with planted edits."""
    import sysconfig

    from simdb.measure import evaluate

    paths = corpus_paths or (sysconfig.get_paths()["stdlib"],)
    documents = text_documents(paths)
    with database(ctx, create_schema=True) as conn:
        return evaluate.evaluate(
            conn,
            documents,
            threshold=threshold,
            permutations=permutations,
            max_distance=max_distance,
            sample=sample,
            copies=copies,
            max_edit=max_edit,
            queries=queries,
            padding_rows=padding_rows,
            jobs=os.cpu_count() or 1,
            progress=say,
        )


def _bench_quality(
    say: Callable[[str], None],
    *,
    quality_paths: tuple[str, ...],
    planted_paths: tuple[str, ...],
    features: str,
    threshold: float,
    sample: int,
    copies: int,
    max_edit: float,
    **_: Any,
) -> Result:
    """simdb bench --quality: every fingerprint against exact Jaccard, corpus by corpus."""
    from simdb.measure import evaluate, quality

    parsed = Features.parse(features)
    groups = [joined.split(os.pathsep) for joined in quality_paths]
    readers.check_sources([*itertools.chain(*groups), *planted_paths])

    def corpora() -> Iterator[tuple[str, Iterable[readers.Document]]]:
        options = readers.Options(skip_errors=True, raw=parsed.binary)
        for label, paths in zip(quality_paths, groups, strict=True):
            say(f"measuring {label}")
            yield label, (d for d in readers.read(paths, options) if isinstance(d, readers.Document))
        for path in planted_paths:
            say(f"measuring {path} with planted edits")
            originals, planted = evaluate.planted_corpus(text_documents((path,)), sample, copies, max_edit, 1)
            yield f"{path} + {len(planted)} edited copies", originals + planted

    return quality.quality(corpora(), parsed, threshold)


def _bench_edits(
    ctx: click.Context,
    say: Callable[[str], None],
    *,
    edits_path: str,
    features: str,
    sample: int,
    threshold: float,
    seed: int,
    **_: Any,
) -> Result:
    """simdb bench --edits: planted single edits, every fingerprint's recall and precision."""
    from simdb.measure import edits

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT

    return edits.bench_edits(
        text_documents((edits_path,)),
        edits_path,
        Features.parse(features),
        sample if given("sample") else edits.DEFAULT_SAMPLE,
        threshold if given("threshold") else edits.DEFAULT_PRECISION_THRESHOLD,
        seed,
        say,
    )


COMMANDS = [calibrate_, bench_]
