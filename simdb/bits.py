"""The one place where unsigned 64-bit fingerprints meet PostgreSQL's signed bigint, plus hex I/O."""

from __future__ import annotations

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


def parse_hex(text: str, bits: int = BITS) -> int:
    """Parse up to 16 hex digits (optional 0x) into an unsigned value; for wider fingerprints, more
    than 16 and up to bits / 4, so that a 64-bit fingerprint is not taken for a wider one."""
    digits = text.strip().lower().removeprefix("0x")
    most = bits // 4
    least = 1 if bits == BITS else 17
    if not least <= len(digits) <= most or any(c not in "0123456789abcdef" for c in digits):
        example = "3f2a9c0d11e4b7a8" * (most // 16)
        width = "" if bits == BITS else f"{bits}-bit "
        raise InvalidParameter(
            f"bad {width}fingerprint {text!r}", f"give {least} to {most} hex digits, e.g. {example}"
        )
    return int(digits, 16)
