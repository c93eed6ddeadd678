"""A minimal command client for administering one server of any version (2.4 to today).

The parent process initiates replica sets, adds shards and shuts servers down. Today's pymongo
refuses servers older than its minimum wire version (4.4 for pymongo 4.x), and the historical
binaries are the point of this target, so administration speaks the wire protocol itself: a
command is one OP_QUERY on `<db>.$cmd` (every server until 5.0 accepts it; handshakes still do)
or one OP_MSG (3.6+, the only form 5.1+ accepts for other commands). Documents are encoded
by pymongo's `bson`, which both pymongo generations ship. Client workers never use this.
"""
from __future__ import annotations

import itertools
import socket
import struct

import bson

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
_ids = itertools.count(1)
OP_MSG_WIRE_VERSION = 6   # MongoDB 3.6


class CommandError(RuntimeError):
    def __init__(self, command: str, reply: dict):
        super().__init__(f"{command}: {reply.get('errmsg', reply)} (code {reply.get('code')})")
        self.reply = reply
        self.code = reply.get("code")


def _recv(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("server closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _roundtrip(sock: socket.socket, opcode: int, body: bytes) -> tuple[int, bytes]:
    request_id = next(_ids)
    sock.sendall(struct.pack("<iiii", 16 + len(body), request_id, 0, opcode) + body)
    length, _rid, _to, reply_op = struct.unpack("<iiii", _recv(sock, 16))
    return reply_op, _recv(sock, length - 16)


def _op_query(sock: socket.socket, db: str, cmd: dict) -> dict:
    body = struct.pack("<i", 0) + f"{db}.$cmd".encode() + b"\0" + struct.pack("<ii", 0, -1) + bson.encode(cmd)
    op, reply = _roundtrip(sock, OP_QUERY, body)
    if op != OP_REPLY:
        raise ConnectionError(f"unexpected reply opcode {op}")
    _flags, _cursor, _start, count = struct.unpack("<iqii", reply[:20])
    return bson.decode(reply[20:]) if count else {}


def _op_msg(sock: socket.socket, db: str, cmd: dict) -> dict:
    body = struct.pack("<I", 0) + b"\0" + bson.encode({**cmd, "$db": db})
    op, reply = _roundtrip(sock, OP_MSG, body)
    if op != OP_MSG:
        raise ConnectionError(f"unexpected reply opcode {op}")
    # flagBits, then section kind 0 (the body document)
    return bson.decode(reply[5:])


class Connection:
    """One connection to host:port; `command` picks OP_MSG or OP_QUERY from the handshake."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        # isMaster is the handshake every version answers (hello arrived in 4.4.2/5.0).
        self.hello = _op_query(self.sock, "admin", {"isMaster": 1})
        self.wire_version = int(self.hello.get("maxWireVersion", 0))

    def command(self, cmd: dict, db: str = "admin", check: bool = True) -> dict:
        send = _op_msg if self.wire_version >= OP_MSG_WIRE_VERSION else _op_query
        reply = send(self.sock, db, cmd)
        if check and not reply.get("ok"):
            raise CommandError(next(iter(cmd)), reply)
        return reply

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def command(host: str, port: int, cmd: dict, db: str = "admin", *, timeout_s: float = 10.0,
            check: bool = True) -> dict:
    with Connection(host, port, timeout_s) as conn:
        return conn.command(cmd, db, check)
