"""What every group of commands shares: the database connection, common options, and one rule for
output (a result has `as_dict()` for --json and `lines()` for people; a command only chooses)."""

from __future__ import annotations

import csv
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from simdb import schema
from simdb.cli.settings import DSN_HELP, Settings
from simdb.db import connection
from simdb.errors import InputError
from simdb.index import modes
from simdb.sketch.features import Content, EmptyDocument, Features
from simdb.sketch.minhash import MINHASH_SPEC_VERSION
from simdb.sketch.simhash import NEW_INDEX_SPEC

if TYPE_CHECKING:
    from simdb.sources import readers

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# psycopg logs a warning when the rollback after an error fails too ("error ignored in rollback
# ... another command is already in progress" after a Ctrl-C mid-statement). With no handler
# configured, Python prints it on stderr beside the one line simdb.cli.run writes, which already
# says what happened; a handler of the commands' own keeps it there (logging configured by
# whoever embeds the CLI still receives it). Here, not in simdb.cli: `simdb --help` loads no logging.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def _take_dsn(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    """--dsn given after the command name: it counts as if given before it (and wins over it)."""
    if value is not None:
        settings = ctx.find_object(Settings)
        if settings is None:
            ctx.obj = Settings(value)
        else:
            settings.dsn = value


def dsn_option(function: F) -> F:
    """--dsn on a command that connects: `simdb ingest --dsn URL ...` = `simdb --dsn URL ingest ...`."""
    option = click.option("--dsn", metavar="DSN", expose_value=False, callback=_take_dsn, help=DSN_HELP)
    return option(function)


@contextmanager
def database(ctx: click.Context, *, create_schema: bool = False) -> Iterator[connection.Connection]:
    """Connect (starting the embedded server if no DSN is given) and migrate simdb's schema. Only
    commands that write pass `create_schema`: the others never add a schema to a database they
    happen to reach, and say so (SchemaMissing)."""
    settings: Settings = ctx.find_object(Settings) or Settings(None)
    target = connection.resolve(settings.dsn)
    with connection.connect(target) as conn:
        schema.ensure_schema(conn, create=create_schema)
        yield conn


def reconnector(ctx: click.Context) -> Callable[[], connection.Connection]:
    """Connect again to the database `database` reached (sync --watch, after an outage)."""
    settings: Settings = ctx.find_object(Settings) or Settings(None)
    target = connection.resolve(settings.dsn, start_embedded=False)
    return lambda: connection.connect(target)


class Result(Protocol):
    """Anything a command prints: JSON for scripts, lines for people."""

    def as_dict(self) -> Any: ...

    def lines(self) -> list[str]: ...


def show(result: Result, as_json: bool, lead: str | None = None) -> None:
    """Print a result as one line of JSON, or as its lines (the first one after `lead`)."""
    if as_json:
        emit_json(result.as_dict())
        return
    lines = result.lines()
    if lead is not None and lines:
        lines[0] = f"{lead} {lines[0]}"
    for line in lines:
        click.echo(line)


def emit_json(value: object) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=None))


@contextmanager
def row_writer(format_: str, header: tuple[str, ...]) -> Iterator[Callable[[tuple[object, ...]], None]]:
    """A row printer for streamed results: csv (with a header line), jsonl (an object a line) or
    json (one array of objects, written as the rows come, closed when the block ends)."""
    if format_ == "csv":
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(header)
        yield out.writerow
        return

    def as_json(row: tuple[object, ...]) -> str:
        return json.dumps(dict(zip(header, row, strict=True)), ensure_ascii=False)

    if format_ == "jsonl":
        yield lambda row: click.echo(as_json(row))
        return
    written = 0

    def element(row: tuple[object, ...]) -> None:
        nonlocal written
        click.echo(("[" if written == 0 else ",") + as_json(row))
        written += 1

    yield element
    click.echo("]" if written else "[]")


_SIZE = re.compile(r"(\d+)\s*([kmg]?)(?:i?b)?", re.IGNORECASE)


def byte_size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """A number of bytes, plain or with K, M or G (KiB, MiB, GiB): 64M, 512K, 2G."""
    found = _SIZE.fullmatch(value.strip())
    if found is None or int(found[1]) == 0:
        raise click.BadParameter(f"{value!r} is not a size: give bytes, or a number and K, M or G, e.g. 64M")
    return int(found[1]) << {"": 0, "k": 10, "m": 20, "g": 30}[found[2].lower()]


def threads_option(help_text: str) -> Callable[[F], F]:
    """--jobs N: threads that share a command's compiled work (all cores by default)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(1),
        default=os.cpu_count() or 1,
        show_default="all cores",
        help=help_text,
    )


# ingest, and attach, sync and reindex of a table's rows
jobs_option = threads_option(
    "Threads that fingerprint in parallel (the compiled kernels run outside the GIL)."
)
# pairs and clusters
pairing_jobs_option = threads_option(
    "Threads that pair the rows in memory, a table or band each (the kernels run outside the GIL)."
)


def json_option(function: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(function)


def format_choice(choices: Sequence[str], default: str, help_text: str) -> Callable[[F], F]:
    """--format: one of `choices`, given to the command as format_."""
    return click.option(
        "--format", "format_", type=click.Choice(choices), default=default, show_default=True, help=help_text
    )


def format_option(function: F) -> F:
    """--format csv|jsonl|json for streamed rows, and --json as the short form of --format json."""
    function = click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON array (the same as --format json)."
    )(function)
    return format_choice(
        ["csv", "jsonl", "json"],
        "csv",
        "csv with a header line, jsonl (an object a line) or json (one array).",
    )(function)


def text_options(verb: str) -> Callable[[F], F]:
    """--text and --file: the text a command works on, given, or read from a file (- for stdin)."""

    def decorate(function: F) -> F:
        function = click.option("--file", type=str, help=f"{verb} this file's text (- reads stdin).")(
            function
        )
        return click.option("--text", help=f"{verb} this text.")(function)

    return decorate


def shards_option(applies: str) -> Callable[[F], F]:
    """--shards of a distributed index, with the option it `applies` to."""
    return click.option(
        "--shards",
        type=click.IntRange(1, 64000),
        help=f"{applies}: the number of shards [default: 2 per worker].",
    )


def features_option(function: F) -> F:
    return click.option(
        "--features",
        default="word:3",
        show_default=True,
        help="Shingles: word:N (word n-grams), char:N (character n-grams) or bytes:N (byte "
        "n-grams of any file, binary too).",
    )(function)


def planned_distance(help_text: str) -> Callable[[F], F]:
    """-k/--max-distance of an index a command plans or makes, simdb create's default k."""
    from simdb.sketch.simhash import DEFAULT_MAX_DISTANCE  # (numpy: only where a command has it)

    return click.option(
        "--max-distance", "-k", type=int, default=DEFAULT_MAX_DISTANCE, show_default=True, help=help_text
    )


def cutoff_options(function: F) -> F:
    """--max-distance (simhash indexes) and --threshold (jaccard indexes) of a search."""
    function = click.option(
        "--threshold",
        type=float,
        help="jaccard index: minimum estimated Jaccard similarity. Default: the index's own (its lowest).",
    )(function)
    return click.option(
        "--max-distance",
        "-k",
        type=int,
        help="simhash index: maximum Hamming distance. Default: the index's own (its maximum).",
    )(function)


def exactly_one(**given: object) -> None:
    chosen = [name for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in given)
        raise click.UsageError(f"give exactly one of {flags}")


def sketch_of(make: Callable[[Content], T], content: Content, source: str, features: Features) -> T:
    """The fingerprint or signature of --text or a --file's content, or a one-line error if it has none."""
    try:
        return make(content)
    except EmptyDocument as error:
        what = "is empty" if features.binary else "has no word characters"
        raise InputError(
            f"{source} {what}, so it has no fingerprint", "give a document with some text"
        ) from error


@contextmanager
def counter(
    description: str, unit: str, total: int | None = None, *, streams_rows: bool = False
) -> Iterator[Callable[[int], object]]:
    """A progress bar (or a running count when the total is unknown) on stderr, on a terminal
    only; the callable adds the work just done. `streams_rows`: the command prints rows as it
    goes, so the bar shows only while they go elsewhere (`simdb pairs docs > pairs.csv`)."""
    from tqdm import tqdm  # (loaded only by commands that show progress)

    with tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=True,
        disable=not sys.stderr.isatty() or (streams_rows and sys.stdout.isatty()),
        file=sys.stderr,
        leave=False,
    ) as bar:
        yield bar.update


def progress_say(as_json: bool) -> Callable[[str], None]:
    """Progress lines on stderr, on a terminal only (and never with --json)."""
    if sys.stderr.isatty() and not as_json:
        return lambda line: click.echo(f"... {line}", err=True)
    return lambda line: None


fingerprint_spec_option = click.option(
    "--fingerprint-spec",
    type=int,
    help=f"simhash: fingerprint spec version, 1, 2 or 3 [default: {NEW_INDEX_SPEC}]; 3 is one-bit "
    "MinHash (finds copies with a word, a line or a sentence changed), 2 SimHash (close copies; "
    "at its k of 3, the former default), 1 only to match fingerprints made under v1.",
)


signature_spec_option = click.option(
    "--signature-spec",
    type=int,
    help=f"jaccard: signature spec version, 1, 2 or 3 [default: {MINHASH_SPEC_VERSION}]; 3 stores the "
    "band keys and a 4096-bit check that verifies candidates, 2 the signature and the check, "
    "1 the signature alone.",
)

bits_option = click.option(
    "--bits",
    type=click.Choice(["64", "128"]),
    callback=lambda _ctx, _param, value: None if value is None else int(value),
    help="simhash: fingerprint width [default: 64]; 128 tells looser similarity apart (k up to 16).",
)


def spec_from_options(mode: str, options: dict[str, Any]) -> modes.Spec:
    """The Spec of `mode` from the command's options, the recommended defaults for the rest (a new
    index of `simdb create` is one-bit MinHash); an option of another mode is a usage error."""
    for other, names in modes.foreign(mode, options).items():
        given = [f"--{name.replace('_', '-')}" for name in names]
        verb = "applies" if len(given) == 1 else "apply"
        raise click.UsageError(f"{' and '.join(given)} {verb} to --mode {other} only")
    own = set(modes.parameter_names(mode))
    return modes.newest_spec(mode, **{name: value for name, value in options.items() if name in own})


def text_documents(paths: tuple[str, ...]) -> Iterator[readers.Document]:
    """The readable documents below `paths` (bad files and records skipped), for measurements."""
    from simdb.sources import readers  # (loaded by the commands that read files)

    readers.check_sources(paths)
    for item in readers.read(paths, readers.Options(skip_errors=True)):
        if isinstance(item, readers.Document):
            yield item
