"""Document sources: text files and folders, JSONL, CSV and stdin, streamed one document at a time.

Every item is a Document or a Skip with its reason, so the ingest summary can count both. Bad
input raises InputError naming the file and line, unless the caller asked to skip errors.
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import itertools
import json
import os
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from simdb.errors import InputError, InvalidParameter
from simdb.sources.keys import key_problem, shown

if TYPE_CHECKING:
    from simdb.sketch.features import Content

FORMATS = ("auto", "text", "jsonl", "csv")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
STDIN = "-"
_BINARY_SNIFF = 8192
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_SUFFIX = ".gz"
# byte-order marks that make a text file UTF-16 or UTF-32 (UTF-32's first: it starts like UTF-16 LE's)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_DECODE_ERRORS = (OSError, EOFError, zlib.error)  # a file's read, or a gzip stream's decompression
_STREAM_PIECE = 1 << 20  # a FileStream's pieces
_SKIP_HINT = "fix it, or pass --skip-errors to skip bad records and go on"

csv.field_size_limit(2**31 - 1)
T = TypeVar("T")


@dataclass(frozen=True)
class Document:
    """One document to fingerprint.

    `consumed`: input it took, for progress (bytes of a file or record, one for a table's row);
    `repaired`: invalid UTF-8 bytes were replaced by U+FFFD.
    """

    key: str
    text: str
    consumed: int
    repaired: bool = False
    data: bytes | None = None  # a file's raw content, read for bytes features
    extension: str | None = None  # a file's extension, lower-case without the dot
    sketch: object | None = None  # a fingerprint or signature computed elsewhere (--fingerprint-field)
    mtime_ns: int | None = None  # a file's modification time when it was read
    given_size: int | None = None  # a file's size on disk, or the size a record gives with its sketch
    stream: FileStream | None = None  # a file too large to read whole (Options.stream_over)
    content_hash: bytes | None = None  # a table row's MD5 of its text (attach's sync compares it)

    @property
    def content(self) -> Content:
        if self.stream is not None:
            return self.stream
        return self.data if self.data is not None else self.text

    @property
    def size(self) -> int | None:
        """Bytes of the document: a file's size on disk, a record's text in UTF-8, or the size a
        record with a sketch gives (None: not given)."""
        if self.given_size is not None or self.sketch is not None:
            return self.given_size
        return len(self.data) if self.data is not None else len(self.text.encode("utf-8"))


@dataclass
class FileStream:
    """A file too large to hold whole, read from its start, piece by piece, each time it is
    sketched: its raw bytes, or its text decoded as a whole file's is (decompressed first when
    `gzipped`, in `encoding`; `repaired` is set once invalid bytes have been replaced). The file
    is read after its size and mtime were taken, so a file that changes meanwhile is read again
    by the next ingest."""

    path: str
    size: int
    raw: bool
    gzipped: bool = False
    encoding: str = "utf-8"
    repaired: bool = False

    def pieces(self) -> Iterator[str | bytes]:
        try:
            with open(self.path, "rb") as handle:
                source: BinaryIO = gzip.GzipFile(fileobj=handle, mode="rb") if self.gzipped else handle  # type: ignore[assignment]
                blocks = iter(lambda: source.read(_STREAM_PIECE), b"")
                yield from blocks if self.raw else self._decoded(blocks)
        except _DECODE_ERRORS as error:
            reason = _why_unreadable(self.path, error) if isinstance(error, OSError) else str(error)
            raise InputError(
                f"cannot read {self.path}: {reason}",
                "check the file, then run the same ingest again to store the rest",
            ) from error

    def _decoded(self, blocks: Iterable[bytes]) -> Iterator[str]:
        """The blocks decoded one by one (a character may span two), strictly until an invalid
        byte turns up, then replacing it as `decode` does."""
        decoder = codecs.getincrementaldecoder(self.encoding)()
        for block in itertools.chain(blocks, [b""]):  # b"": the end, where a cut-off character is invalid
            state = decoder.getstate()
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError:
                self.repaired = True
                decoder = codecs.getincrementaldecoder(self.encoding)("replace")
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


def decode(data: bytes, encoding: str = "utf-8") -> tuple[str, bool]:
    """Text (UTF-8 unless a byte-order mark said otherwise); invalid bytes become U+FFFD
    (documented) and the document is counted as repaired."""
    try:
        return data.decode(encoding), False
    except UnicodeDecodeError:
        return data.decode(encoding, errors="replace"), True


def extension_of(name: str) -> str:
    """A file's kind for --same-extension: the last dot-part of its name that is not a number,
    lower-case, so that libz.so, libz.so.1 and libz.so.1.2.13 are all 'so' ('' when none)."""
    parts = os.path.basename(name).lstrip(".").lower().split(".")
    while len(parts) > 1 and parts[-1].isdigit():
        parts.pop()
    return parts[-1] if len(parts) > 1 else ""


def read_document(path: str, raw: bool = False, stdin: BinaryIO | None = None) -> Document:
    """One file (or `-`: all of stdin) as a single document, for `query --file` and `fingerprint --file`."""
    check_sources([path])
    if path != STDIN and os.path.isdir(path):
        hint = "give a file in it; `simdb ingest` reads folders"
        raise InputError(f"{path} is a folder, and --file reads one file", hint)
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


def read_opened(handle: BinaryIO, key: str, raw: bool = False) -> Item:
    """One file already opened, read from its start as ingest reads it (a gzip stream
    decompressed unless `raw`, byte-order marks, the sniff for binary content), so that what a
    later reader compares with the index went through the same steps. Raises OSError, EOFError
    or zlib.error as a read does."""
    handle.seek(0)
    gzipped = not raw and handle.read(2) == _GZIP_MAGIC
    handle.seek(0)
    stream: BinaryIO = gzip.GzipFile(fileobj=handle, mode="rb") if gzipped else handle  # type: ignore[assignment]
    return next(_read_text(stream, key, Options(raw=raw)))


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


@dataclass(frozen=True)
class Scope:
    """The keys an ingest of some files and folders covers: those files' keys, and every key
    under those folders (for `ingest --delete-missing`)."""

    keys: list[str]
    folders: list[str]  # key prefixes, each ending in a separator ('' for --relative-to's own folder)

    def patterns(self) -> list[str]:
        """The folders as LIKE patterns (their own %, _ and backslashes escaped)."""
        escaped = (
            folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") for folder in self.folders
        )
        return [f"{folder}%" for folder in escaped]


def scope(paths: Iterable[str], options: Options) -> Scope:
    """The Scope of an ingest of `paths`; InputError for sources that are not files or folders."""
    if options.format in ("jsonl", "csv") or any(
        path == STDIN or _kind(path, options.format) != "text" for path in paths
    ):
        raise InputError(
            "--delete-missing removes the rows of files gone from the folders given; "
            "it does not apply to stdin or to JSONL/CSV records",
            "give folders and text files, or remove records with `simdb delete`",
        )
    keys, folders = [], []
    for path in paths:
        if os.path.isdir(path):
            key = file_key(path, options.root)
            folders.append("" if key == os.curdir else key.rstrip(os.sep) + os.sep)
        else:
            keys.append(file_key(path, options.root))
    return Scope(keys, folders)


def file_key(path: str, root: str | None = None) -> str:
    """A file's key: its absolute path (normalised: no `.`, `..` or doubled separators), or that
    path relative to `root`. One file has one key however it was named on the command line."""
    absolute = os.path.abspath(path)
    return absolute if root is None else os.path.relpath(absolute, os.path.abspath(root))


def total_size(paths: Iterable[str], raw: bool = False) -> int | None:
    """Bytes to read, for a progress bar (a gzip file's once decompressed, unless `raw`); None
    when stdin is among the sources."""
    total = 0
    for path in paths:
        if path == STDIN:
            return None
        files = _walk(path) if os.path.isdir(path) else [path]
        total += sum(_size(file, raw) for file in files if isinstance(file, str))
    return total


def read(paths: Iterable[str], options: Options = Options(), stdin: BinaryIO | None = None) -> Iterator[Item]:
    """All documents of all sources, in order; a file reached under several names is read once."""
    paths = list(paths)
    aliases = _Aliases(paths)
    for path in paths:
        kind = _kind(path, options.format)
        if path == STDIN:
            stream = stdin if stdin is not None else sys.stdin.buffer
            yield from _read_stream(stream, STDIN, kind, options)
        elif os.path.isdir(path):
            yield from _read_files(_walk(path), options, aliases)
        elif kind == "text":
            yield from _read_files([path], options, aliases)
        else:
            yield from _read_file(path, kind, options)


UNCHANGED = "unchanged"  # a file whose size and modification time are those stored: not read
ALIAS = "another name of a file read"  # a symbolic or hard link to a file this read reaches too
BAD_NAME = "name not storable as a key"  # not UTF-8, or too long (keys.key_problem)
_KNOWN_CHUNK = 500  # files looked up in the index at once


class _Aliases:
    """Which files one read reaches under more than one name, so that each is read once.

    A symbolic link is passed over when its target is read under its own name too: a regular
    file named among the sources, or one the walk of a source folder reaches. Otherwise the
    first name reached stands for a file that several links lead to (by device and inode, kept
    only for links: a file with one name and no link to it cannot come twice).
    """

    def __init__(self, paths: list[str]) -> None:
        self.files = {
            os.path.realpath(path)
            for path in paths
            if path != STDIN and not os.path.isdir(path) and not os.path.islink(path)
        }
        self.folders = [os.path.realpath(path) for path in paths if os.path.isdir(path)]
        self.reached: set[tuple[int, int]] = set()

    def read_elsewhere(self, path: str, info: os.stat_result | None) -> bool:
        """Whether the file at `path` (`info`: its os.stat, None if that failed) is read under
        another name."""
        if info is None:
            return False  # the read says what is wrong with it
        link = os.path.islink(path)
        if link and stat.S_ISREG(info.st_mode) and self._read_as_itself(os.path.realpath(path)):
            return True
        if not (link or info.st_nlink > 1):
            return False
        identity = (info.st_dev, info.st_ino)
        if identity in self.reached:
            return True
        self.reached.add(identity)
        return False

    def _read_as_itself(self, target: str) -> bool:
        if target in self.files:
            return True
        for folder in self.folders:
            inside = os.path.relpath(target, folder)
            if not inside.startswith(os.pardir) and not any(
                part.startswith(".") for part in inside.split(os.sep)
            ):
                return True  # _walk reaches it (it leaves hidden names out)
        return False


def _read_files(entries: Iterable[str | OSError], options: Options, aliases: _Aliases) -> Iterator[Item]:
    """Text files, each one document, and folders that could not be listed (as their error).

    A file whose name cannot be a key is passed over and counted, as is a second name of a file
    read (_Aliases); with `options.known`, a file whose size and modification time equal the
    stored ones is passed over unread (looked up in chunks: one query per chunk)."""
    entries = iter(entries)
    while chunk := list(itertools.islice(entries, _KNOWN_CHUNK)):
        files: list[tuple[str, str, os.stat_result | None]] = []
        for entry in chunk:
            if isinstance(entry, OSError):
                folder = str(entry.filename)
                message = f"cannot read folder {folder}: {entry.strerror or entry}"
                hint = "check the folder's permissions, or pass --skip-errors to count it and go on"
                yield from _fail(options, folder, message, "unreadable", hint)
                continue
            key = file_key(entry, options.root)
            try:
                info: os.stat_result | None = os.stat(entry)
            except OSError:
                info = None  # (_read_file says why)
            if key_problem(key) is not None:
                yield Skip(shown(key), BAD_NAME, _size(entry, True))
            elif aliases.read_elsewhere(entry, info):
                yield Skip(key, ALIAS, _size(entry, options.raw))
            else:
                files.append((entry, key, info))
        known = options.known([key for _, key, _ in files]) if options.known and files else {}
        for path, key, info in files:
            if info is not None and known.get(key) == (info.st_size, info.st_mtime_ns):
                yield Skip(key, UNCHANGED, _size(path, options.raw))
            else:
                yield from _read_file(path, "text", options, info, key)


def _kind(path: str, chosen: str) -> str:
    if chosen != "auto":
        return chosen
    if path == STDIN:
        return "jsonl"
    lowered = path.lower().removesuffix(_GZIP_SUFFIX)
    if lowered.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if lowered.endswith(CSV_SUFFIXES):
        return "csv"
    return "text"


def _walk(folder: str) -> Iterator[str | OSError]:
    """Files below a folder, sorted, hidden entries (dot names) left out; symlinked folders not
    followed. A folder that cannot be listed comes as its OSError, in its place."""
    unlisted: list[OSError] = []
    for root, dirs, files in os.walk(folder, onerror=unlisted.append):
        yield from unlisted
        unlisted.clear()
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.join(root, name)
    yield from unlisted


def _size(path: str, raw: bool) -> int:
    """A file's bytes as read: its size on disk, or a .gz file's once decompressed (the size its
    trailer records, modulo 4 GiB), unless `raw`. Only a regular .gz file is opened."""
    try:
        info = os.stat(path)
        if raw or not path.lower().endswith(_GZIP_SUFFIX) or not stat.S_ISREG(info.st_mode):
            return info.st_size
        with open(path, "rb") as handle:
            if handle.read(2) != _GZIP_MAGIC:
                return info.st_size
            handle.seek(-4, os.SEEK_END)
            return int.from_bytes(handle.read(4), "little")
    except OSError:
        return 0


NOT_REGULAR = "not a regular file"  # a named pipe, socket or device: reading it could wait forever


def _read_file(
    path: str, kind: str, options: Options, info: os.stat_result | None = None, key: str | None = None
) -> Iterator[Item]:
    """The items of one file; `info` is its os.stat and `key` its file_key where the caller has
    them already (a walk of many files makes one system call a file fewer)."""
    try:
        info = os.stat(path) if info is None else info
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
        stream: BinaryIO = handle
        name = path
        gzipped = not options.raw and handle.read(2) == _GZIP_MAGIC
        handle.seek(0)
        if gzipped:  # read as what it holds: its content's kind, and extension, by the inner name
            stream = gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[assignment]
            name = path.removesuffix(_GZIP_SUFFIX)
        whole = _size(path, options.raw) if gzipped else info.st_size  # (bytes once decompressed)
        try:
            if kind == "text" and options.stream_over is not None and whole > options.stream_over:
                yield from _streamed(stream, path, options, info, gzipped, extension_of(name))
            elif kind == "text":
                key = file_key(path, options.root) if key is None else key
                yield from _read_text(
                    stream, key, options, info.st_mtime_ns, info.st_size, extension_of(name)
                )
            else:
                yield from _read_stream(stream, path, kind, options)
        except _DECODE_ERRORS as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            message = f"cannot read {path}: {reason}"
            hint = "check that it is a whole gzip file" if gzipped else "check the file"
            yield from _fail(options, path, message, "unreadable", hint)


def _read_stream(stream: BinaryIO, name: str, kind: str, options: Options) -> Iterator[Item]:
    if kind == "jsonl":
        yield from _read_jsonl(stream, name, options)
    elif kind == "csv":
        yield from _read_csv(stream, name, options)
    else:
        yield from _read_text(stream, name, options)


def _read_text(
    stream: BinaryIO,
    key: str,
    options: Options,
    mtime_ns: int | None = None,
    size: int | None = None,
    extension: str | None = None,
) -> Iterator[Item]:
    """One document of all the stream's bytes (`size`: the file's on disk, `extension`: its kind).

    A text read decodes UTF-8, or UTF-16 or UTF-32 when a byte-order mark says so; one that finds
    a NUL byte in the first _BINARY_SNIFF bytes otherwise skips the file as binary, unread."""
    if options.raw:
        data = stream.read()
        yield Document(key, "", len(data), data=data, extension=extension, mtime_ns=mtime_ns, given_size=size)
        return
    data = stream.read(_BINARY_SNIFF)
    encoding = _encoding(data)
    if encoding == "utf-8" and b"\0" in data:
        yield Skip(key, "binary", len(data) if size is None else size)
        return
    data += stream.read()
    text, repaired = decode(data, encoding)
    yield Document(key, text, len(data), repaired, extension=extension, mtime_ns=mtime_ns, given_size=size)


def _encoding(start: bytes) -> str:
    """utf-16 or utf-32 when a text starts with that byte-order mark, else utf-8."""
    return next((name for bom, name in _BOMS if start.startswith(bom)), "utf-8")


def _streamed(
    stream: BinaryIO, path: str, options: Options, info: os.stat_result, gzipped: bool, extension: str
) -> Iterator[Item]:
    """A file larger than options.stream_over as a Document that reads it when it is sketched
    (a FileStream), after the check for binary content that a text read makes."""
    key = file_key(path, options.root)
    start = b"" if options.raw else stream.read(_BINARY_SNIFF)
    encoding = _encoding(start)
    if encoding == "utf-8" and b"\0" in start:
        yield Skip(key, "binary", info.st_size)
        return
    reader = FileStream(path, info.st_size, options.raw, gzipped, encoding)
    yield Document(
        key,
        "",
        info.st_size,
        extension=extension,
        mtime_ns=info.st_mtime_ns,
        given_size=info.st_size,
        stream=reader,
    )


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
            # (some of json's messages end in "at", as in "Unterminated string starting at")
            message = f"{where}: not valid JSON ({error.msg.removesuffix(' at')} at column {error.colno})"
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
    problem = key_problem(str(key))
    if problem is not None:
        message = f"{where}: the key '{shown(str(key))}' {problem}"
        return _refuse(options, where, message, "fix the record or pick another --key-field", consumed)
    if options.fingerprint_field is not None and options.parse_sketch is not None:
        try:
            sketch = _field(record, options.fingerprint_field, options.parse_sketch)
            size = _field(record, "size", _given_size)  # as `simdb export` writes them
            extension = _field(record, "extension", _given_extension)
        except InvalidParameter as error:
            message = f"{where}: {error.message}"
            return _refuse(options, where, message, error.hint or _SKIP_HINT, consumed)
        return Document(str(key), "", consumed, repaired, extension=extension, sketch=sketch, given_size=size)
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


def _field(record: dict[str, object], name: str, parse: Callable[[object], T]) -> T:
    """A record's field (None when missing) as `parse` reads it; InvalidParameter names the field."""
    try:
        return parse(record.get(name))
    except InvalidParameter as error:
        raise InvalidParameter(f"field {name!r}: {error.message}", error.hint) from error


def _given_size(value: object) -> int | None:
    """A record's size beside its sketch: bytes, or none."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InvalidParameter(f"{value!r} is not a number of bytes", "give a whole number, or leave it empty")


def _given_extension(value: object) -> str | None:
    """A record's extension beside its sketch, or none."""
    if value is None or isinstance(value, str):
        return value or None  # (CSV cannot tell none from empty)
    raise InvalidParameter(f"{value!r} is not text", "give text, or leave it empty")


def _refuse(options: Options, where: str, message: str, hint: str, consumed: int) -> Skip:
    if not options.skip_errors:
        raise InputError(message, hint)
    return Skip(where, "malformed", consumed)


def _why_unreadable(path: str, error: OSError) -> str:
    """The OS's reason, naming a broken symbolic link as one (the OS says only that nothing is
    there) and a loop of links as one (the OS says only that there are too many levels)."""
    if os.path.islink(path) and error.errno == errno.ELOOP:
        chain = f"{path} -> {os.readlink(path)} -> ..."
        return f"it is a symbolic link in a loop of links ({chain}), which leads to no file"
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
