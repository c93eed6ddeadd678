"""A scripted wire-protocol server for the paths no stand-in covers: it answers each command with
what a test's `reply(command, db)` returns, over OP_QUERY and OP_MSG, on 127.0.0.1 on a free
port, and records every command it received. The reply shapes each test gives are taken from the
servers' sources (named where they are written)."""
from __future__ import annotations

import socket
import struct
import threading
from typing import Callable

import bson

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013


def _recv(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError
        data += chunk
    return data


def _op_msg_command(body: bytes) -> dict:
    """The body section plus any document sequences (pymongo sends inserts' documents as one)."""
    pos, command = 4, None
    while pos < len(body):
        kind = body[pos]
        pos += 1
        size = struct.unpack_from("<i", body, pos)[0]
        if kind == 0:
            command = bson.decode(body[pos:pos + size])
        else:
            end = pos + size
            name_end = body.index(b"\0", pos + 4)
            name, docs, cursor = body[pos + 4:name_end].decode(), [], name_end + 1
            while cursor < end:
                length = struct.unpack_from("<i", body, cursor)[0]
                docs.append(bson.decode(body[cursor:cursor + length]))
                cursor += length
            command = {**(command or {}), name: docs}
        pos += size
    return command or {}


class ScriptedServer:
    def __init__(self, reply: Callable[[dict, str], dict]):
        self.reply = reply
        self.received: list[tuple[str, dict]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def commands(self, name: str) -> list[dict]:
        return [c for _, c in self.received if next(iter(c), "").lower() == name.lower()]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                length, request_id, _, op = struct.unpack("<iiii", _recv(conn, 16))
                body = _recv(conn, length - 16)
                if op == OP_QUERY:
                    name_end = body.index(b"\0", 4)
                    db = body[4:name_end].decode().split(".")[0]
                    command = bson.decode(body[name_end + 9:])
                else:
                    command = _op_msg_command(body)
                    db = command.get("$db", "admin")
                self.received.append((db, command))
                answer = bson.encode(self.reply(command, db))
                if op == OP_QUERY:
                    out = struct.pack("<iqii", 0, 0, 0, 1) + answer
                    conn.sendall(struct.pack("<iiii", 16 + len(out), 0, request_id, OP_REPLY) + out)
                else:
                    out = struct.pack("<I", 0) + b"\0" + answer
                    conn.sendall(struct.pack("<iiii", 16 + len(out), 0, request_id, OP_MSG) + out)
        except (ConnectionError, OSError):
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
