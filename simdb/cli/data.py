"""Writing an index's rows: ingest documents, load precomputed fingerprints, delete keys, prune
rows not seen for a while."""

from __future__ import annotations

import dataclasses
import sys
from datetime import timedelta

import click

from simdb import ingest
from simdb.cli.common import (
    byte_size,
    counter,
    database,
    dsn_option,
    format_choice,
    jobs_option,
    json_option,
    show,
)
from simdb.errors import InvalidParameter
from simdb.index import lifecycle as indexes
from simdb.index import modes
from simdb.index.modes import Index
from simdb.sources import fingerprints, readers

PRUNE_ASKS_ABOVE = 0.5  # the share of an index's rows a prune may remove without asking


@click.command(name="ingest")
@click.argument("name")
@click.argument("paths", nargs=-1, required=True)
@format_choice(
    readers.FORMATS, "auto", "auto: .jsonl/.ndjson and .csv by extension, folders as text, - as JSONL."
)
@click.option("--key-field", default="key", show_default=True, help="JSONL/CSV field holding the key.")
@click.option("--text-field", default="text", show_default=True, help="JSONL/CSV field holding the text.")
@click.option(
    "--fingerprint-field",
    metavar="FIELD",
    help="JSONL/CSV field holding a fingerprint computed elsewhere, instead of text: hex digits "
    "(or a JSON integer, unsigned or signed), or for a jaccard index the signature as a JSON list "
    "or '{...}', as `simdb fingerprint` and `simdb export` print them.",
)
@click.option(
    "--delimiter",
    default=",",
    show_default=True,
    help="CSV field separator: one character (';', '|', ...) or 'tab'.",
)
@click.option("--skip-errors", is_flag=True, help="Skip and count bad records or files instead of stopping.")
@click.option(
    "--relative-to",
    "root",
    metavar="DIR",
    help="Key files by their path relative to DIR (which must hold them all) instead of their "
    "absolute path, so a tree keeps its keys when it moves.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1),
    default=ingest.DEFAULT_BATCH,
    show_default=True,
    help="Documents per transaction.",
)
@click.option(
    "--batch-bytes",
    metavar="SIZE",
    callback=byte_size,
    default=f"{ingest.DEFAULT_BATCH_BYTES >> 20}M",
    show_default=True,
    help="Bytes of documents per transaction at most (K, M, G: 512K, 64M, 1G); a larger document "
    "is one by itself. Ingest holds up to three batches at once. A file larger than this is not "
    "read whole, but piece by piece as it is fingerprinted.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Read and fingerprint every file again, also those whose size and modification time are "
    "unchanged since they were ingested (which are otherwise counted unchanged, unread).",
)
@click.option(
    "--delete-missing",
    is_flag=True,
    help="Then remove the rows of files under the folders given (and of the files given) that this "
    "run did not find: deleted or renamed files, and those now skipped (empty, binary, another name "
    "of a file). Not done when a file or folder could not be read.",
)
@click.option(
    "--keep-text",
    is_flag=True,
    help="Keep each document's text, zlib-compressed, in simdb.NAME__texts, so that `simdb serve` "
    "can show JSONL and CSV records (files are read by their path anyway); from then on every "
    "ingest into NAME keeps its texts. Costs disk: see docs/serve.md.",
)
@click.option(
    "--create",
    "create_missing",
    is_flag=True,
    help="Create the index with default settings if it is missing.",
)
@jobs_option
@json_option
@dsn_option
@click.pass_context
def ingest_(
    ctx: click.Context,
    name: str,
    paths: tuple[str, ...],
    format_: str,
    key_field: str,
    text_field: str,
    fingerprint_field: str | None,
    delimiter: str,
    skip_errors: bool,
    root: str | None,
    batch_size: int,
    batch_bytes: int,
    force: bool,
    delete_missing: bool,
    keep_text: bool,
    create_missing: bool,
    jobs: int,
    as_json: bool,
) -> None:
    """Fingerprint files, folders, JSONL or CSV (or - for stdin) into index NAME.

    A file's key is its absolute path (`docs/a.txt`, `./docs/a.txt` and `/home/me/docs/a.txt`
    are one key), or its path relative to --relative-to; JSONL and CSV records give theirs.
    Re-ingesting a key replaces its row, so an interrupted run is completed by running it again.
    gzip files are read decompressed (a .jsonl.gz file as JSONL); text files in UTF-16
    or UTF-32 are read by their byte-order mark. A file reached under several names (links) is
    read once, and names that cannot be keys (not UTF-8, over 2600 bytes) are skipped and counted.
    """
    delimiter = {"tab": "\t", "\\t": "\t"}.get(delimiter, delimiter)
    checked = readers.Options(  # checked before anything connects
        format_,
        key_field,
        text_field,
        skip_errors,
        root=root,
        delimiter=delimiter,
        fingerprint_field=fingerprint_field,
    )
    readers.check_sources(paths, root)
    if fingerprint_field is not None:
        readers.check_record_sources(paths, format_)
    scope = readers.scope(paths, checked) if delete_missing else None
    with database(ctx, create_schema=True) as conn:
        if create_missing:
            target = indexes.get_or_create(conn, name, modes.newest_spec(modes.DEFAULT_MODE), _say_created)
        else:
            target = indexes.get(conn, name)
        options = dataclasses.replace(  # what the index decides
            checked,
            raw=target.features.binary,
            parse_sketch=target.parse_given,
            known=None if force else ingest.file_times(conn, target),
            stream_over=batch_bytes,
        )
        with counter(f"ingest {name}", "B", readers.total_size(paths, options.raw)) as done:
            documents = readers.read(paths, options)
            report = ingest.ingest(
                conn,
                target,
                documents,
                batch_size=batch_size,
                batch_bytes=batch_bytes,
                progress=done,
                jobs=jobs,
                delete_missing=scope,
                keep_text=keep_text,
            )
    show(report, as_json)


@click.command(name="load")
@click.argument("name")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=False))
@format_choice(
    ("auto", *fingerprints.FORMATS),
    "auto",
    "auto: by extension (.npy, .u64 or .bin, .jsonl, .csv). npy: one column of 64-bit integers; "
    "u64: raw little-endian 64-bit values; their rows are keyed by number (from 0).",
)
@click.option("--key-field", default="key", show_default=True, help="JSONL/CSV field holding the key.")
@click.option(
    "--fingerprint-field",
    default="fingerprint",
    show_default=True,
    help="JSONL/CSV field holding the fingerprint: hex digits, or an integer (unsigned or signed).",
)
@click.option(
    "--delimiter", default=",", show_default=True, help="CSV field separator: one character or 'tab'."
)
@click.option(
    "--key-prefix",
    default="",
    help="npy/u64: text before each row's number in its key ('doc-' gives doc-0, ...).",
)
@click.option(
    "--restart",
    is_flag=True,
    help="Empty the index of an interrupted load and load PATH from its start (by default a load "
    "of the same file resumes where it stopped).",
)
@json_option
@dsn_option
@click.pass_context
def load_(
    ctx: click.Context,
    name: str,
    path: str,
    format_: str,
    key_field: str,
    fingerprint_field: str,
    delimiter: str,
    key_prefix: str,
    restart: bool,
    as_json: bool,
) -> None:
    """Fill new index NAME with fingerprints computed elsewhere, at the speed of COPY.

    The rows are copied without the index's B-trees, which are built once at the end: several
    times faster than `simdb ingest --fingerprint-field`, for a new 64-bit simhash index. Each
    100,000 rows commit on their own; an interrupted load resumes when run again on the same
    file (and --restart starts it over). Keys must be unique.
    """
    from simdb import load
    from simdb.sources.fingerprints import Fields, FingerprintFile, format_of

    chosen = format_of(path, None if format_ == "auto" else format_)
    with database(ctx, create_schema=True) as conn:
        target = indexes.get(conn, name)
        fields = Fields(
            target.parse_given, key_field, fingerprint_field, {"tab": "\t"}.get(delimiter, delimiter)
        )
        with FingerprintFile(path, chosen, fields, key_prefix) as source:
            unit = "rows" if source.rows is not None else "B"
            with counter(f"load {name}", unit, source.total) as done:
                report = load.load(conn, target, source, restart=restart, progress=done)
    show(report, as_json)


def _say_created(index: Index) -> None:
    """ingest --create made the index: say so on stderr, with what it finds."""
    for line in index.lines():
        click.echo(f"created {line}", err=True)


@click.command(name="delete")
@click.argument("name")
@click.argument("keys", nargs=-1, required=True)
@dsn_option
@click.pass_context
def delete_(ctx: click.Context, name: str, keys: tuple[str, ...]) -> None:
    """Remove the rows of KEYS from index NAME (in one transaction)."""
    with database(ctx) as conn:
        removed = ingest.delete(conn, indexes.get(conn, name), keys)
    click.echo(f"deleted {removed} of {len(set(keys))} keys")


@click.command(name="prune")
@click.argument("name")
@click.option(
    "--older-than",
    "older_than",
    required=True,
    metavar="DURATION",
    help="Remove rows last seen longer ago than this: 90s, 15m, 12h, 30d, 2w, 1d12h.",
)
@click.option("--yes", is_flag=True, help="Do not ask, even when most of the rows would go.")
@json_option
@dsn_option
@click.pass_context
def prune_(ctx: click.Context, name: str, older_than: str, yes: bool, as_json: bool) -> None:
    """Remove the rows of index NAME that were last seen more than DURATION ago.

    A row is seen when it is written, and when an ingest finds its file or record unchanged, so
    re-ingesting a folder nightly and pruning after 7 days removes only what left the folder.

    A prune that would remove more than half of the rows asks first (or needs --yes when no one
    can answer), as `simdb drop` does; nothing is removed unless it goes ahead.
    """
    age = ingest.parse_duration(older_than)

    def agree(removed: int, rows: int) -> bool:
        if yes or removed <= rows * PRUNE_ASKS_ABOVE:
            return True
        if not sys.stdin.isatty():
            raise InvalidParameter(
                f"pruning index {name!r} would remove {removed} of its {rows} rows; nothing was removed",
                "pass --yes to remove them, or a longer --older-than",
            )
        return click.confirm(f"Remove {removed} of the {rows} rows of index {name}?")

    with database(ctx) as conn:
        removed = ingest.prune(conn, indexes.get(conn, name), age, agree=agree)
    show(_Pruned(name, removed, age), as_json)


@dataclasses.dataclass(frozen=True)
class _Pruned:
    """What a prune removed, and the age it was given (as --older-than writes it)."""

    name: str
    removed: int
    older_than: timedelta

    def as_dict(self) -> dict[str, object]:
        return {
            "index": self.name,
            "removed": self.removed,
            "older_than": ingest.format_duration(self.older_than),
            "older_than_seconds": int(self.older_than.total_seconds()),
        }

    def lines(self) -> list[str]:
        return [f"pruned {self.removed} rows not seen for {ingest.format_duration(self.older_than)}"]


COMMANDS = [ingest_, load_, delete_, prune_]
