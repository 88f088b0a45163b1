"""An unsigned value sent to PostgreSQL as bit(n): psycopg has no adapter of its own for it, so
these dumpers, registered on import, write it as text (X...) or in the binary COPY format."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

BIT_OID = 1560  # pg_type's bit


@dataclass(frozen=True)
class BitString:
    """An unsigned value to send to PostgreSQL as bit(bits) (psycopg has no adapter of its own)."""

    value: int
    bits: int


class _BitTextDumper(Dumper):
    oid = BIT_OID

    def dump(self, obj: BitString) -> bytes:
        return b"X" + format(obj.value, f"0{obj.bits // 4}x").encode("ascii")


class _BitBinaryDumper(Dumper):
    oid = BIT_OID
    format = Format.BINARY

    def dump(self, obj: BitString) -> bytes:
        return struct.pack("!i", obj.bits) + obj.value.to_bytes(obj.bits // 8, "big")


psycopg.adapters.register_dumper(BitString, _BitTextDumper)
psycopg.adapters.register_dumper(BitString, _BitBinaryDumper)
