"""The one place where unsigned 64-bit fingerprints meet PostgreSQL's signed bigint, plus hex I/O."""

from __future__ import annotations

import re

from simdb.errors import InvalidParameter

BITS = 64
MASK64 = (1 << BITS) - 1
_SIGN = 1 << (BITS - 1)


def to_signed(value: int) -> int:
    """Unsigned 64-bit value -> the bigint with the same two's-complement bits."""
    return value - (1 << BITS) if value & _SIGN else value


def to_unsigned(value: int) -> int:
    """bigint (signed) -> the unsigned 64-bit value with the same bits."""
    return value & MASK64


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit values (signed or unsigned alike)."""
    return ((a ^ b) & MASK64).bit_count()


def to_hex(value: int, bits: int = BITS) -> str:
    """16 (or bits / 4) lower-case hex digits of the unsigned value."""
    return format(value & ((1 << bits) - 1), f"0{bits // 4}x")


# The one rule for a fingerprint given as text, here and in SQL (simdb.from_hex, and simdb.near's and
# the other functions' text arguments: sql/functions/_parsed_fingerprint.v1.sql spells the same
# patterns): hex digits, upper or lower case, optionally after 0x or 0X, optionally between ASCII
# spaces, tabs or line breaks, so that an all-digit string is hex too, never a decimal number. A
# wider fingerprint may also be its bits in binary digits, all of them (PostgreSQL's text of a
# bit(128), which a driver hands back): at 128 characters, never hex, which has at most 32.
_BLANKS = r"[ \t\n\r\f\v]*"
HEX_PATTERN = re.compile(f"{_BLANKS}(?:0[xX])?([0-9a-fA-F]+){_BLANKS}")
BINARY_PATTERN = re.compile(f"{_BLANKS}([01]+){_BLANKS}")


def parse_hex(text: str, bits: int = BITS) -> int:
    """Parse up to 16 hex digits (optional 0x) into an unsigned value; for wider fingerprints, more
    than 16 and up to bits / 4, so that a 64-bit fingerprint is not taken for a wider one, or
    exactly `bits` binary digits."""
    binary = BINARY_PATTERN.fullmatch(text)
    if bits > BITS and binary and len(binary.group(1)) == bits:
        return int(binary.group(1), 2)
    found = HEX_PATTERN.fullmatch(text)
    digits = found.group(1) if found else ""
    most = bits // 4
    least = 1 if bits == BITS else 17
    if not least <= len(digits) <= most:
        example = "3f2a9c0d11e4b7a8" * (most // 16)
        width = "" if bits == BITS else f"{bits}-bit "
        raise InvalidParameter(
            f"bad {width}fingerprint {text!r}", f"give {least} to {most} hex digits, e.g. {example}"
        )
    return int(digits, 16)
