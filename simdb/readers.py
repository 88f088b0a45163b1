"""Document sources: text files and folders, JSONL, CSV and stdin, streamed one document at a time.

Every item is a Document or a Skip with its reason, so the ingest summary can count both. Bad
input raises InputError naming the file and line, unless the caller asked to skip errors.
"""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from simdb.errors import InputError, InvalidParameter

FORMATS = ("auto", "text", "jsonl", "csv")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
STDIN = "-"
_BINARY_SNIFF = 8192
_SKIP_HINT = "fix it, or pass --skip-errors to skip bad records and go on"

csv.field_size_limit(2**31 - 1)


@dataclass(frozen=True)
class Document:
    """One document to fingerprint.

    `consumed`: bytes of input it took (for progress); `repaired`: invalid UTF-8 bytes were
    replaced by U+FFFD.
    """

    key: str
    text: str
    consumed: int
    repaired: bool = False
    data: bytes | None = None  # a file's raw content, read for bytes features
    extension: str | None = None  # a file's extension, lower-case without the dot

    @property
    def content(self) -> str | bytes:
        return self.data if self.data is not None else self.text

    @property
    def size(self) -> int:
        """Bytes of the document: the file's raw size, or its text in UTF-8."""
        return len(self.data) if self.data is not None else len(self.text.encode("utf-8"))


@dataclass(frozen=True)
class Skip:
    """Input passed over, with the reason counted in the summary."""

    source: str
    reason: str
    consumed: int = 0


Item = Document | Skip


@dataclass(frozen=True)
class Options:
    """How to read the sources."""

    format: str = "auto"
    key_field: str = "key"
    text_field: str = "text"
    skip_errors: bool = False
    raw: bool = False  # keep files' raw bytes (bytes features) instead of decoding them

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise InvalidParameter(f"unknown format {self.format!r}", f"use one of {', '.join(FORMATS)}")


def decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text; invalid bytes become U+FFFD (documented) and the document is counted as repaired."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def read_document(path: str, raw: bool = False) -> Document:
    """One file as a single document (for `query --file` and `fingerprint --file`)."""
    check_sources([path])
    for item in _read_file(path, "text", Options(raw=raw)):
        if isinstance(item, Document):
            return item
        if item.reason == NOT_REGULAR:
            raise InputError(f"{path} is {NOT_REGULAR} (a pipe, socket or device)", "give a regular file")
        raise InputError(
            f"{path} looks binary (it has NUL bytes)", "give a text file, or use --features bytes:N"
        )
    raise InputError(f"cannot read {path}", "check the path")  # pragma: no cover (one item always)


def check_sources(paths: Iterable[str]) -> None:
    """Fail before anything is written when a named path does not exist."""
    for path in paths:
        if path != STDIN and not os.path.lexists(path):
            raise InputError(f"no such file or folder: {path}", "check the path")


def total_size(paths: Iterable[str]) -> int | None:
    """Bytes to read, for a progress bar; None when stdin is among the sources."""
    total = 0
    for path in paths:
        if path == STDIN:
            return None
        if os.path.isdir(path):
            total += sum(_size(file) for file in _walk(path))
        else:
            total += _size(path)
    return total


def read(paths: Iterable[str], options: Options = Options(), stdin: BinaryIO | None = None) -> Iterator[Item]:
    """All documents of all sources, in order."""
    for path in paths:
        kind = _kind(path, options.format)
        if path == STDIN:
            stream = stdin if stdin is not None else sys.stdin.buffer
            yield from _read_stream(stream, STDIN, kind, options)
        elif os.path.isdir(path):
            for file in _walk(path):
                yield from _read_file(file, "text", options)
        else:
            yield from _read_file(path, kind, options)


def _kind(path: str, chosen: str) -> str:
    if chosen != "auto":
        return chosen
    if path == STDIN:
        return "jsonl"
    lowered = path.lower()
    if lowered.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if lowered.endswith(CSV_SUFFIXES):
        return "csv"
    return "text"


def _walk(folder: str) -> Iterator[str]:
    """Files below a folder, sorted, hidden entries (dot names) left out; symlinked folders not followed."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.join(root, name)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


NOT_REGULAR = "not a regular file"  # a named pipe, socket or device: reading it could wait forever


def _read_file(path: str, kind: str, options: Options) -> Iterator[Item]:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            yield Skip(path, NOT_REGULAR)
            return
        handle = open(path, "rb")  # noqa: SIM115 (closed below; the generator may stop early)
    except OSError as error:
        yield from _fail(
            options,
            path,
            f"cannot read {path}: {error.strerror}",
            "unreadable",
            "check the file's permissions",
        )
        return
    with handle:
        if kind == "text":
            yield from _read_text(handle, path, options)
        else:
            yield from _read_stream(handle, path, kind, options)


def _read_stream(stream: BinaryIO, name: str, kind: str, options: Options) -> Iterator[Item]:
    if kind == "jsonl":
        yield from _read_jsonl(stream, name, options)
    elif kind == "csv":
        yield from _read_csv(stream, name, options)
    else:
        yield from _read_text(stream, name, options)


def _read_text(stream: BinaryIO, key: str, options: Options) -> Iterator[Item]:
    try:
        data = stream.read()
    except OSError as error:
        yield from _fail(options, key, f"cannot read {key}: {error.strerror}", "unreadable", "check the file")
        return
    extension = os.path.splitext(key)[1].lstrip(".").lower() if key != STDIN else None
    if options.raw:
        yield Document(key, "", len(data), data=data, extension=extension)
        return
    if b"\0" in data[:_BINARY_SNIFF]:
        yield Skip(key, "binary", len(data))
        return
    text, repaired = decode(data)
    yield Document(key, text, len(data), repaired, extension=extension)


def _read_jsonl(stream: BinaryIO, name: str, options: Options) -> Iterator[Item]:
    for number, line in enumerate(stream, start=1):
        where = f"{name}:{number}"
        if not line.strip():
            continue
        text, repaired = decode(line)
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            yield from _fail(
                options, where, f"{where}: not valid JSON ({error.msg})", "malformed", _SKIP_HINT, len(line)
            )
            continue
        if not isinstance(record, dict):
            yield from _fail(
                options, where, f"{where}: a JSON line must be an object", "malformed", _SKIP_HINT, len(line)
            )
            continue
        yield _record(record, where, options, len(line), repaired)


def _read_csv(stream: BinaryIO, name: str, options: Options) -> Iterator[Item]:
    repaired_lines: list[bool] = []

    def lines() -> Iterator[str]:
        for raw in stream:
            text, repaired = decode(raw)
            repaired_lines.append(repaired)
            yield text

    reader = csv.reader(lines(), strict=True)
    header: list[str] | None = None
    while True:
        where = f"{name}:{reader.line_num + 1}"
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            yield from _fail(options, where, f"{where}: malformed CSV ({error})", "malformed", _SKIP_HINT)
            continue
        if header is None:
            header = row
            continue
        repaired = any(repaired_lines)
        repaired_lines.clear()
        if not row:
            continue
        if len(row) != len(header):
            yield from _fail(
                options,
                where,
                f"{where}: malformed CSV row: {len(row)} fields where the header has {len(header)}",
                "malformed",
                _SKIP_HINT,
            )
            continue
        yield _record(dict(zip(header, row, strict=True)), where, options, sum(map(len, row)), repaired)


def _record(record: dict[str, object], where: str, options: Options, consumed: int, repaired: bool) -> Item:
    """A Document from a JSONL object or CSV row, or InputError for a missing or wrong field."""
    for field in (options.key_field, options.text_field):
        if field not in record:
            flag = "--key-field" if field == options.key_field else "--text-field"
            fields = ", ".join(record) or "none"
            return _refuse(
                options,
                where,
                f"{where}: no field {field!r} (fields: {fields})",
                f"name the right one with {flag}",
                consumed,
            )
    key, text = record[options.key_field], record[options.text_field]
    if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
        message = f"{where}: the key {options.key_field!r} must be a non-empty string or integer"
        return _refuse(options, where, message, "fix the record or pick another --key-field", consumed)
    if not isinstance(text, str):
        return _refuse(
            options,
            where,
            f"{where}: the text {options.text_field!r} must be a string",
            "fix the record or pick another --text-field",
            consumed,
        )
    return Document(str(key), text, consumed, repaired)


def _refuse(options: Options, where: str, message: str, hint: str, consumed: int) -> Skip:
    if not options.skip_errors:
        raise InputError(message, hint)
    return Skip(where, "malformed", consumed)


def _fail(
    options: Options, where: str, message: str, reason: str, hint: str, consumed: int = 0
) -> Iterator[Skip]:
    """Raise InputError, or with --skip-errors yield a counted Skip."""
    if not options.skip_errors:
        raise InputError(message, hint)
    yield Skip(where, reason, consumed)
