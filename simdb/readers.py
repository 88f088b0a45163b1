"""Document sources: text files and folders, JSONL, CSV and stdin, streamed one document at a time.

Every item is a Document or a Skip with its reason, so the ingest summary can count both. Bad
input raises InputError naming the file and line, unless the caller asked to skip errors.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from simdb.errors import InputError, InvalidParameter

if TYPE_CHECKING:
    from simdb.simhash import Content

FORMATS = ("auto", "text", "jsonl", "csv")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
STDIN = "-"
_BINARY_SNIFF = 8192
_STREAM_PIECE = 1 << 20  # a FileStream's pieces
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
    sketch: object | None = None  # a fingerprint or signature computed elsewhere (--fingerprint-field)
    mtime_ns: int | None = None  # a file's modification time when it was read
    stream: FileStream | None = None  # a file too large to read whole (Options.stream_over)

    @property
    def content(self) -> Content:
        if self.stream is not None:
            return self.stream
        return self.data if self.data is not None else self.text

    @property
    def size(self) -> int | None:
        """Bytes of the document: the file's raw size, or its text in UTF-8 (None: not given)."""
        if self.sketch is not None:
            return None
        if self.stream is not None:
            return self.stream.size
        return len(self.data) if self.data is not None else len(self.text.encode("utf-8"))


@dataclass
class FileStream:
    """A file too large to hold whole, read from its start, piece by piece, each time it is
    sketched: its raw bytes, or its text decoded as `decode` decodes a whole file (`repaired`
    is set once invalid UTF-8 has been replaced). The file is read after its size and mtime
    were taken, so a file that changes meanwhile is read again by the next ingest."""

    path: str
    size: int
    raw: bool
    repaired: bool = False

    def pieces(self) -> Iterator[str | bytes]:
        try:
            with open(self.path, "rb") as handle:
                blocks = iter(lambda: handle.read(_STREAM_PIECE), b"")
                yield from blocks if self.raw else self._decoded(blocks)
        except OSError as error:
            raise InputError(
                f"cannot read {self.path}: {_why_unreadable(self.path, error)}",
                "check the file, then run the same ingest again to store the rest",
            ) from error

    def _decoded(self, blocks: Iterable[bytes]) -> Iterator[str]:
        """The blocks decoded as UTF-8 one by one (a character may span two), strictly until
        invalid UTF-8 turns up, then replacing it as `decode` does."""
        decoder = codecs.getincrementaldecoder("utf-8")()
        for block in itertools.chain(blocks, [b""]):  # b"": the end, where a cut-off character is invalid
            state = decoder.getstate()
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError:
                self.repaired = True
                decoder = codecs.getincrementaldecoder("utf-8")("replace")
                decoder.setstate(state)
                text = decoder.decode(block, final=not block)
            if text:
                yield text


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
    root: str | None = None  # files' keys relative to this folder; absolute paths when None
    delimiter: str = ","  # CSV field separator
    fingerprint_field: str | None = None  # records give their sketch in this field, not their text
    parse_sketch: Callable[[object], object] | None = None  # the index's check of such a field
    # (size, mtime_ns) stored for these file keys: files where both are unchanged are not read
    known: Callable[[list[str]], Mapping[str, tuple[int | None, int | None]]] | None = None
    # files larger than this many bytes are not read whole: their Document has a FileStream
    stream_over: int | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise InvalidParameter(f"unknown format {self.format!r}", f"use one of {', '.join(FORMATS)}")
        if len(self.delimiter) != 1 or self.delimiter in '"\r\n':
            raise InvalidParameter(
                f"bad CSV delimiter {self.delimiter!r}", "give one character, e.g. ';', or 'tab'"
            )


def decode(data: bytes) -> tuple[str, bool]:
    """UTF-8 text; invalid bytes become U+FFFD (documented) and the document is counted as repaired."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def read_document(path: str, raw: bool = False, stdin: BinaryIO | None = None) -> Document:
    """One file (or `-`: all of stdin) as a single document, for `query --file` and `fingerprint --file`."""
    check_sources([path])
    items = (
        _read_text(stdin or sys.stdin.buffer, STDIN, Options(raw=raw))
        if path == STDIN
        else _read_file(path, "text", Options(raw=raw))
    )
    for item in items:
        if isinstance(item, Document):
            return item
        if item.reason == NOT_REGULAR:
            raise InputError(f"{path} is {NOT_REGULAR} (a pipe, socket or device)", "give a regular file")
        raise InputError(
            f"{'stdin' if path == STDIN else path} looks binary (it has NUL bytes)",
            "give a text file; binary files need bytes features: --features bytes:4 on "
            "`simdb create` or `simdb fingerprint`",
        )
    raise InputError(f"cannot read {path}", "check the path")  # pragma: no cover (one item always)


def check_sources(paths: Iterable[str], root: str | None = None) -> None:
    """Fail before anything is written when a named path does not exist or lies outside `root`."""
    if root is not None and not os.path.isdir(root):
        raise InputError(f"--relative-to {root}: no such folder", "give the folder that holds the sources")
    for path in paths:
        if path == STDIN:
            continue
        if not os.path.lexists(path):
            raise InputError(f"no such file or folder: {path}", "check the path")
        if root is not None and file_key(path, root).startswith(os.pardir + os.sep):
            raise InputError(
                f"{path} is outside --relative-to {root}", "give a folder that holds every source"
            )


def check_record_sources(paths: Iterable[str], format_: str) -> None:
    """Fail before anything is written when a source is not read as records (JSONL or CSV)."""
    for path in paths:
        if os.path.isdir(path) or _kind(path, format_) == "text":
            raise InputError(
                f"{path} is read as text, which has no fields; --fingerprint-field reads JSONL or CSV",
                "give .jsonl or .csv files (or --format jsonl|csv)",
            )


def file_key(path: str, root: str | None = None) -> str:
    """A file's key: its absolute path (normalised: no `.`, `..` or doubled separators), or that
    path relative to `root`. One file has one key however it was named on the command line."""
    absolute = os.path.abspath(path)
    return absolute if root is None else os.path.relpath(absolute, os.path.abspath(root))


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
            yield from _read_files(_walk(path), options)
        elif kind == "text":
            yield from _read_files([path], options)
        else:
            yield from _read_file(path, kind, options)


UNCHANGED = "unchanged"  # a file whose size and modification time are those stored: not read
_KNOWN_CHUNK = 500  # files looked up in the index at once


def _read_files(paths: Iterable[str], options: Options) -> Iterator[Item]:
    """Text files, each one document; with `options.known`, a file whose size and modification
    time equal the stored ones is passed over unread (looked up in chunks: one query per chunk)."""
    if options.known is None:
        for path in paths:
            yield from _read_file(path, "text", options)
        return
    files = iter(paths)
    while chunk := list(itertools.islice(files, _KNOWN_CHUNK)):
        keys = [file_key(path, options.root) for path in chunk]
        known = options.known(keys)
        for path, key in zip(chunk, keys, strict=True):
            try:
                info = os.stat(path)
            except OSError:
                info = None
            if info is not None and known.get(key) == (info.st_size, info.st_mtime_ns):
                yield Skip(key, UNCHANGED, info.st_size)
            else:
                yield from _read_file(path, "text", options)


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
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            yield Skip(path, NOT_REGULAR)
            return
        handle = open(path, "rb")  # noqa: SIM115 (closed below; the generator may stop early)
    except OSError as error:
        yield from _fail(
            options,
            path,
            f"cannot read {path}: {_why_unreadable(path, error)}",
            "unreadable",
            _unreadable_hint(error),
        )
        return
    with handle:
        if kind == "text" and options.stream_over is not None and info.st_size > options.stream_over:
            yield from _streamed(handle, path, options, info)
        elif kind == "text":
            key = file_key(path, options.root)
            yield from _read_text(handle, key, options, info.st_mtime_ns, info.st_size)
        else:
            yield from _read_stream(handle, path, kind, options)


def _read_stream(stream: BinaryIO, name: str, kind: str, options: Options) -> Iterator[Item]:
    if kind == "jsonl":
        yield from _read_jsonl(stream, name, options)
    elif kind == "csv":
        yield from _read_csv(stream, name, options)
    else:
        yield from _read_text(stream, name, options)


def _read_text(
    stream: BinaryIO, key: str, options: Options, mtime_ns: int | None = None, size: int | None = None
) -> Iterator[Item]:
    """One document of all the stream's bytes. A text read that finds a NUL byte in the first
    _BINARY_SNIFF bytes skips the file as binary without reading the rest (`size`: the file's)."""
    try:
        data = stream.read() if options.raw else stream.read(_BINARY_SNIFF)
        if not options.raw and b"\0" in data:
            yield Skip(key, "binary", len(data) if size is None else size)
            return
        if not options.raw:
            data += stream.read()
    except OSError as error:
        yield from _fail(options, key, f"cannot read {key}: {error.strerror}", "unreadable", "check the file")
        return
    extension = _extension(key)
    if options.raw:
        yield Document(key, "", len(data), data=data, extension=extension, mtime_ns=mtime_ns)
        return
    text, repaired = decode(data)
    yield Document(key, text, len(data), repaired, extension=extension, mtime_ns=mtime_ns)


def _streamed(handle: BinaryIO, path: str, options: Options, info: os.stat_result) -> Iterator[Item]:
    """A file larger than options.stream_over as a Document that reads it when it is sketched
    (a FileStream), after the check for binary content that a text read makes."""
    key = file_key(path, options.root)
    try:
        binary = not options.raw and b"\0" in handle.read(_BINARY_SNIFF)
    except OSError as error:
        yield from _fail(options, key, f"cannot read {key}: {error.strerror}", "unreadable", "check the file")
        return
    if binary:
        yield Skip(key, "binary", info.st_size)
        return
    stream = FileStream(path, info.st_size, options.raw)
    yield Document(key, "", info.st_size, extension=_extension(key), mtime_ns=info.st_mtime_ns, stream=stream)


def _extension(key: str) -> str | None:
    """A file's extension, lower-case without the dot (None for stdin)."""
    return os.path.splitext(key)[1].lstrip(".").lower() if key != STDIN else None


def _without_bom(lines: Iterable[bytes]) -> Iterator[bytes]:
    """The lines, with a UTF-8 byte-order mark removed from the first (editors on Windows add one)."""
    for number, line in enumerate(lines):
        yield line.removeprefix(codecs.BOM_UTF8) if number == 0 else line


def _read_jsonl(stream: BinaryIO, name: str, options: Options) -> Iterator[Item]:
    for number, line in enumerate(_without_bom(stream), start=1):
        where = f"{name}:{number}"
        if not line.strip():
            continue
        text, repaired = decode(line)
        try:
            record = json.loads(text.rstrip("\r\n"))
        except json.JSONDecodeError as error:
            message = f"{where}: not valid JSON ({error.msg} at column {error.colno})"
            yield from _fail(options, where, message, "malformed", _SKIP_HINT, len(line))
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
        for raw in _without_bom(stream):
            text, repaired = decode(raw)
            repaired_lines.append(repaired)
            yield text

    reader = csv.reader(lines(), strict=True, delimiter=options.delimiter)
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
    flags = {options.key_field: "--key-field"}
    flags[options.fingerprint_field or options.text_field] = (
        "--fingerprint-field" if options.fingerprint_field else "--text-field"
    )
    for field, flag in flags.items():
        if field not in record:
            fields = ", ".join(record) or "none"
            return _refuse(
                options,
                where,
                f"{where}: no field {field!r} (fields: {fields})",
                f"name the right one with {flag}",
                consumed,
            )
    key = record[options.key_field]
    if not isinstance(key, (str, int)) or isinstance(key, bool) or key == "":
        message = f"{where}: the key {options.key_field!r} must be a non-empty string or integer"
        return _refuse(options, where, message, "fix the record or pick another --key-field", consumed)
    if options.fingerprint_field is not None and options.parse_sketch is not None:
        try:
            sketch = options.parse_sketch(record[options.fingerprint_field])
        except InvalidParameter as error:
            message = f"{where}: field {options.fingerprint_field!r}: {error.message}"
            return _refuse(options, where, message, error.hint or _SKIP_HINT, consumed)
        return Document(str(key), "", consumed, repaired, sketch=sketch)
    text = record[options.text_field]
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


def _why_unreadable(path: str, error: OSError) -> str:
    """The OS's reason, naming a broken symbolic link as one (the OS says only that nothing is there)."""
    if os.path.islink(path) and not os.path.exists(path):
        return f"it is a symbolic link to {os.readlink(path)}, which does not exist"
    return error.strerror or str(error)


def _unreadable_hint(error: OSError) -> str:
    """What to do about a file that could not be opened, by the OS's reason."""
    if isinstance(error, PermissionError):
        return "check the file's permissions"
    if isinstance(error, FileNotFoundError):
        return "check the path, or pass --skip-errors to count such files and go on"
    return "check the file, or pass --skip-errors to count such files and go on"


def _fail(
    options: Options, where: str, message: str, reason: str, hint: str, consumed: int = 0
) -> Iterator[Skip]:
    """Raise InputError, or with --skip-errors yield a counted Skip."""
    if not options.skip_errors:
        raise InputError(message, hint)
    yield Skip(where, reason, consumed)
