"""Order-preserving key encoding for the embedded record-store layout.

An index entry's key is the concatenation of its encoded fields, so comparing two keys byte by
byte must give the same order as comparing the field tuples (the job MongoDB's KeyString does).
Every field starts with a type tag; numbers of one type sort numerically, strings and bytes
lexicographically. A descending field is stored with every byte inverted, which reverses its
order because each encoding is prefix-free.
"""
from __future__ import annotations

import struct

from bson import ObjectId

TAG_NULL = 0x05
TAG_INT = 0x10
TAG_FLOAT = 0x11
TAG_STR = 0x3C
TAG_BYTES = 0x44
TAG_OBJECTID = 0x64
TAG_BOOL = 0x6E

_I64 = struct.Struct(">Q")
_TAGGED_I64 = struct.Struct(">BQ").pack
_SIGN = 1 << 63
_MASK = (1 << 64) - 1
_INVERT = bytes(range(255, -1, -1))
_OID_TAG = bytes((TAG_OBJECTID,))
_BYTES_TAG = bytes((TAG_BYTES,))


def _escape(raw: bytes) -> bytes:
    # 0x00 ends a variable-length field, so a literal 0x00 becomes 0x00 0xFF.
    return raw.replace(b"\x00", b"\x00\xff") + b"\x00"


def encode_value(value) -> bytes:
    # The common types first, tested by exact type: this runs for every index entry written.
    kind = type(value)
    if kind is int:
        return _TAGGED_I64(TAG_INT, (value + _SIGN) & _MASK)
    if kind is ObjectId:
        return _OID_TAG + value.binary
    if kind is bytes:
        return _BYTES_TAG + (_escape(value) if b"\x00" in value else value + b"\x00")
    return _encode_other(value)


def _encode_other(value) -> bytes:
    if value is None:
        return bytes((TAG_NULL,))
    if isinstance(value, bool):
        return bytes((TAG_BOOL, 1 if value else 0))
    if isinstance(value, int):
        return bytes((TAG_INT,)) + _I64.pack((value + _SIGN) & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        (bits,) = _I64.unpack(struct.pack(">d", value))
        bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits & _SIGN else bits | _SIGN
        return bytes((TAG_FLOAT,)) + _I64.pack(bits)
    if isinstance(value, str):
        return bytes((TAG_STR,)) + _escape(value.encode())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes((TAG_BYTES,)) + _escape(bytes(value))
    if isinstance(value, ObjectId):
        return bytes((TAG_OBJECTID,)) + value.binary
    raise TypeError(f"cannot encode a key field of type {type(value).__name__}")


def encode_key(values, directions=None) -> bytes:
    """Encode a tuple of field values; `directions` holds 1 or -1 per field (default all 1)."""
    if directions is None or -1 not in directions:
        return b"".join(map(encode_value, values))
    parts = []
    for value, direction in zip(values, directions):
        part = encode_value(value)
        parts.append(part.translate(_INVERT) if direction < 0 else part)
    return b"".join(parts)


def _decode_value(buf: bytes, pos: int):
    tag = buf[pos]
    pos += 1
    if tag == TAG_INT:
        (raw,) = _I64.unpack_from(buf, pos)
        return raw - _SIGN, pos + 8
    if tag == TAG_FLOAT:
        (bits,) = _I64.unpack_from(buf, pos)
        bits = bits ^ _SIGN if bits & _SIGN else bits ^ 0xFFFFFFFFFFFFFFFF
        return struct.unpack(">d", _I64.pack(bits))[0], pos + 8
    if tag == TAG_OBJECTID:
        return ObjectId(buf[pos:pos + 12]), pos + 12
    if tag in (TAG_STR, TAG_BYTES):
        out = bytearray()
        while True:
            end = buf.index(b"\x00", pos)
            out += buf[pos:end]
            if end + 1 < len(buf) and buf[end + 1] == 0xFF:
                out += b"\x00"
                pos = end + 2
                continue
            pos = end + 1
            break
        return (out.decode() if tag == TAG_STR else bytes(out)), pos
    if tag == TAG_NULL:
        return None, pos
    if tag == TAG_BOOL:
        return bool(buf[pos]), pos + 1
    raise ValueError(f"unknown key tag 0x{tag:02x} at offset {pos - 1}")


def decode_key(buf: bytes, directions=None) -> tuple:
    """Decode all fields of an ascending key, or of a key with the given directions."""
    if directions is not None and any(d < 0 for d in directions):
        raise NotImplementedError("decoding descending fields is not needed by any workload")
    values = []
    pos = 0
    while pos < len(buf):
        value, pos = _decode_value(buf, pos)
        values.append(value)
    return tuple(values)


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key that starts with `prefix` (None: no bound)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes((stripped[-1] + 1,))
