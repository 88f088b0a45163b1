"""Files of fingerprints computed elsewhere, read in chunks of numpy arrays for `simdb load`:
a numpy .npy array or a raw file of little-endian 64-bit values (rows keyed by their number), or
JSONL/CSV records with a key and a fingerprint field.

Each file is opened once and known by what fstat says of the opened file (device, inode, size,
modification time): a run resumed later reads on only if the path still names that same file,
never another file or a symlink swapped in.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from simdb.errors import InputError, SimdbError
from simdb.sources.keys import MAX_KEY_BYTES, key_problem, shown

FORMATS = ("npy", "u64", "jsonl", "csv")
_EXTENSIONS = {".npy": "npy", ".u64": "u64", ".bin": "u64", ".jsonl": "jsonl", ".csv": "csv"}


@dataclass(frozen=True)
class Chunk:
    """Rows read: key i is keys[ends[i-1]:ends[i]] (UTF-8 bytes end to end), its fingerprint
    values[i] (unsigned); `consumed` is how far into the file they reach (bytes or rows, as the
    file's `total` counts)."""

    keys: npt.NDArray[np.uint8]
    ends: npt.NDArray[np.int64]
    values: npt.NDArray[np.uint64]
    consumed: int

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class Fields:
    """How records name their key and fingerprint, and how a fingerprint field is read."""

    parse: Callable[[object], object]  # the index's reading of a fingerprint (hex digits, integers)
    key: str = "key"
    fingerprint: str = "fingerprint"
    delimiter: str = ","


def format_of(path: str, given: str | None) -> str:
    """The format given, or the one the file's extension names."""
    if given is not None:
        return given
    extension = os.path.splitext(path)[1].lower()
    if extension == ".gz":
        raise InputError(f"{path} is compressed", "decompress it first (gunzip -k), then load the file")
    if extension not in _EXTENSIONS:
        raise InputError(
            f"{path}: cannot tell the format from the extension {extension or '(none)'!r}",
            f"give --format ({', '.join(FORMATS)})",
        )
    return _EXTENSIONS[extension]


class FingerprintFile:
    """One opened file of fingerprints: `identity` names it, `total` measures it (rows or bytes),
    and `chunks(start, rows)` reads it from the `start`-th row on."""

    def __init__(self, path: str, format_: str, fields: Fields | None = None, key_prefix: str = "") -> None:
        if format_ not in FORMATS:
            raise InputError(f"unknown format {format_!r}", f"give one of {', '.join(FORMATS)}")
        try:
            self.handle: BinaryIO = open(path, "rb")  # noqa: SIM115 (closed by close())
        except OSError as error:
            raise InputError(
                f"cannot read {path}: {error.strerror}", "check the path and its permissions"
            ) from error
        status = os.fstat(self.handle.fileno())
        self.path, self.format, self.fields, self.key_prefix = path, format_, fields, key_prefix
        self.identity = f"{status.st_dev}:{status.st_ino}:{status.st_size}:{status.st_mtime_ns}"
        self.source = os.path.abspath(path)
        self._offset, self.rows = 0, None
        if format_ == "npy":
            self._offset, self.rows = _npy_layout(self.handle, path)
        elif format_ == "u64":
            if status.st_size % 8:
                self.close()
                raise InputError(
                    f"{path} is {status.st_size} bytes, not a whole number of 8-byte fingerprints",
                    "give a file of little-endian 64-bit values, or --format",
                )
            self.rows = status.st_size // 8
        self.total: int = self.rows if self.rows is not None else status.st_size

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> FingerprintFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def chunks(self, start: int, rows: int) -> Iterator[Chunk]:
        """Chunks of at most `rows` rows, from row `start` (0: the first) to the end."""
        if self.rows is not None:
            yield from self._numbered(self.rows, start, rows)
        else:
            yield from self._records(start, rows)

    def _numbered(self, total: int, start: int, rows: int) -> Iterator[Chunk]:
        from simdb.kernels import compiled

        values = np.memmap(self.handle, dtype="<u8", mode="r", offset=self._offset, shape=(total,))
        prefix = np.frombuffer(self.key_prefix.encode(), dtype=np.uint8)
        for first in range(start, total, rows):
            chunk = np.ascontiguousarray(values[first : first + rows], dtype=np.uint64)
            keys, ends = compiled.numbered_keys(prefix, first, len(chunk))
            yield Chunk(keys, ends, chunk, first + len(chunk))

    def _records(self, start: int, rows: int) -> Iterator[Chunk]:
        fields = self.fields
        if fields is None:
            raise InputError(f"{self.path}: records need Fields to be read", "give fields=Fields(...)")
        self.handle.seek(0)
        if self.format == "jsonl":
            batches = _json_batches(self.handle, self.path, fields, rows)
        else:
            text = io.TextIOWrapper(self.handle, encoding="utf-8-sig", newline="")
            batches = _csv_batches(text, self.path, fields, rows)
        seen = 0
        for numbers, keys, values in batches:
            skip = min(len(numbers), max(0, start - seen))
            seen += len(numbers)
            if skip < len(numbers):
                where = [f"{self.path}:{number}" for number in numbers[skip:]]
                yield _chunk(where, keys[skip:], values[skip:], fields.parse, self.handle.tell())


def _npy_layout(handle: BinaryIO, path: str) -> tuple[int, int]:
    """(offset of the data, rows) of a .npy file of one column of 64-bit integers."""
    try:
        version = np.lib.format.read_magic(handle)
        header = (
            np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        )
        shape, _, dtype = header(handle)
    except ValueError as error:
        raise InputError(
            f"{path} is not a numpy .npy file ({error})", "save it with numpy.save, or give --format"
        ) from error
    if len(shape) != 1 or dtype.kind not in "iu" or dtype.itemsize != 8 or dtype.byteorder == ">":
        raise InputError(
            f"{path} holds a {dtype} array of shape {shape}",
            "save one column of 64-bit fingerprints: numpy.save(path, values.astype('<u8'))",
        )
    return handle.tell(), int(shape[0])


Batch = tuple[list[int], list[object], list[object]]  # line numbers, keys, fingerprints


def _json_batches(handle: BinaryIO, path: str, fields: Fields, rows: int) -> Iterator[Batch]:
    """The records' keys and fingerprints, `rows` records at a time, each batch parsed by one
    json.loads of them all (a line at a time only to name a line that is not JSON)."""
    numbers: list[int] = []
    lines: list[bytes] = []
    for number, line in enumerate(handle, 1):
        if line.strip():
            numbers.append(number)
            lines.append(line)
        if len(lines) == rows:
            yield _json_batch(numbers, lines, path, fields)
            numbers, lines = [], []
    if lines:
        yield _json_batch(numbers, lines, path, fields)


def _json_batch(numbers: list[int], lines: list[bytes], path: str, fields: Fields) -> Batch:
    try:
        records = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        records = [_json_line(line, f"{path}:{number}") for number, line in zip(numbers, lines, strict=True)]
    try:
        return numbers, [r[fields.key] for r in records], [r[fields.fingerprint] for r in records]
    except (KeyError, TypeError):
        for number, record in zip(numbers, records, strict=True):
            where = f"{path}:{number}"
            if not isinstance(record, dict):
                raise InputError(f"{where}: not a JSON object", "give one object a line") from None
            _field(record, fields.key, where, "--key-field")
            _field(record, fields.fingerprint, where, "--fingerprint-field")
        raise


def _json_line(line: bytes, where: str) -> object:
    try:
        return json.loads(line)
    except ValueError as error:
        raise InputError(f"{where}: malformed JSON ({error})", _FIX) from error


def _csv_batches(text: io.TextIOWrapper, path: str, fields: Fields, rows: int) -> Iterator[Batch]:
    """The rows' keys and fingerprints, `rows` rows at a time, by the columns the header names."""
    reader = csv.reader(text, strict=True, delimiter=fields.delimiter)
    batch: Batch = ([], [], [])
    try:
        header = next(reader, [])
        key = _position(header, fields.key, f"{path}:1", "--key-field")
        value = _position(header, fields.fingerprint, f"{path}:1", "--fingerprint-field")
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise InputError(
                    f"{path}:{reader.line_num}: {len(row)} fields where the header has {len(header)}", _FIX
                )
            batch[0].append(reader.line_num)
            batch[1].append(row[key])
            batch[2].append(row[value])
            if len(batch[0]) == rows:
                yield batch
                batch = ([], [], [])
    except (csv.Error, UnicodeDecodeError) as error:
        raise InputError(f"{path}:{reader.line_num + 1}: malformed CSV ({error})", _FIX) from error
    if batch[0]:
        yield batch


def _field(record: dict[str, object], name: str, where: str, flag: str) -> object:
    if name not in record:
        raise InputError(
            f"{where}: no field {name!r} (fields: {', '.join(record) or 'none'})", f"name it with {flag}"
        )
    return record[name]


def _position(header: list[str], name: str, where: str, flag: str) -> int:
    """Where the CSV header names a field (an error naming the fields when it does not)."""
    _field(dict.fromkeys(header), name, where, flag)
    return header.index(name)


def _chunk(
    where: list[str],
    keys: list[object],
    values: list[object],
    parse: Callable[[object], object],
    consumed: int,
) -> Chunk:
    """A chunk of records' keys and fingerprints, checked all at once; a record that fails a
    check is then found and named (with the fix) by checking each in turn."""
    texts = [str(key) for key in keys]
    try:
        if not {type(key) for key in keys} <= {str, int}:
            raise ValueError("a key that is neither text nor an integer")
        encoded = [text.encode() for text in texts]
        sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        joined = b"".join(encoded)
        if b"\0" in joined or (len(sizes) and (sizes.min() == 0 or sizes.max() > MAX_KEY_BYTES)):
            raise ValueError("a key that cannot be stored")
        ends = np.cumsum(sizes)
        return Chunk(
            np.frombuffer(joined, dtype=np.uint8), ends, _fingerprints(values, parse, where), consumed
        )
    except (ValueError, UnicodeEncodeError):
        for place, key in zip(where, keys, strict=True):
            problem = (
                key_problem(str(key))
                if isinstance(key, (str, int)) and not isinstance(key, bool)
                else "is not text or an integer"
            )
            if problem is not None:
                raise InputError(f"{place}: the key '{shown(str(key))}' {problem}", _FIX) from None
        raise


def _fingerprints(
    values: list[object], parse: Callable[[object], object], where: list[str]
) -> npt.NDArray[np.uint64]:
    """The fingerprints as unsigned integers: 16 hex digits a value decoded at once (as
    `simdb fingerprint` prints them), anything else by the index's `parse`, one at a time."""
    if values and all(type(value) is str and len(value) == 16 for value in values):
        try:
            digits = np.array(values, dtype="S16")
        except UnicodeEncodeError:
            digits = np.zeros(len(values), dtype="S16")  # (not hex: each is read below, and named)
        nibbles = _HEX[digits.view(np.uint8).reshape(-1, 16)]
        if (nibbles < 16).all():
            shifts = np.arange(60, -4, -4, dtype=np.uint64)
            combined: npt.NDArray[np.uint64] = np.bitwise_or.reduce(
                nibbles.astype(np.uint64) << shifts, axis=1
            )
            return combined
    parsed = np.empty(len(values), dtype=np.uint64)
    for position, (place, value) in enumerate(zip(where, values, strict=True)):
        try:
            fingerprint = parse(value)
        except SimdbError as error:
            raise InputError(f"{place}: {error.message}", error.hint) from error
        if not isinstance(fingerprint, int):
            raise InputError(
                f"{place}: {value!r} is not a 64-bit fingerprint", "give hex digits or an integer"
            )
        parsed[position] = fingerprint
    return parsed


_FIX = "fix the record, then load again with --restart"
_HEX = np.full(256, 255, dtype=np.uint8)
_HEX[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)
