#!/usr/bin/env python3
"""A stand-in for mongod in unit tests of the launch/stop machinery (not of MongoDB): it prints
the mongodb-master-2023-06-27 --version/--help texts (a 7.1 development build, SOURCES.md), listens
on --port, and answers the handful of commands the launcher sends (isMaster, ping, replSetInitiate,
addShard, shutdown) over OP_QUERY and OP_MSG, with that build's maxWireVersion.
STANDIN_IGNORE_SHUTDOWN=1 makes it ignore shutdown and SIGTERM (to test the SIGKILL path). The
integration suite uses real binaries only."""
import os
import signal
import socket
import struct
import sys
from pathlib import Path

import bson

HERE = Path(__file__).parent
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
if "--version" in sys.argv:
    print((HERE / "mongodb-master-2023-06-27.version.txt").read_text(), end="")
    sys.exit(0)
if "--help" in sys.argv:
    print((HERE / "mongodb-master-2023-06-27.help.txt").read_text(), end="")
    sys.exit(0)
stubborn = os.environ.get("STANDIN_IGNORE_SHUTDOWN") == "1"
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
Path(args["logpath"]).write_text(f"standin listening on {args['port']}\n")
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((args.get("bind_ip", "127.0.0.1"), int(args["port"])))
server.listen(16)
initiated = "replSet" not in args


def recv(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError
        data += chunk
    return data


while True:
    conn, _ = server.accept()
    try:
        while True:
            length, rid, _, op = struct.unpack("<iiii", recv(conn, 16))
            body = recv(conn, length - 16)
            if op == 2004:
                name_end = body.index(b"\0", 4)
                cmd = bson.decode(body[name_end + 9:])
            else:
                cmd = bson.decode(body[5:])
            name = next(iter(cmd))
            if name == "shutdown" and not stubborn:
                sys.exit(0)
            if name == "replSetInitiate":
                initiated = True
            # 22: LATEST_WIRE_VERSION = REPLICA_SET_TRANSACTIONS (7) + kSince_4_0, the index of the latest
            # FCV 7.1 in releases.yml (src/mongo/db/wire_version.h, src/mongo/util/version/releases.h.tpl
            # at the tree the fixtures come from)
            reply = {"ok": 1, "ismaster": initiated, "maxWireVersion": 22}
            if op == 2004:
                out = struct.pack("<iqii", 0, 0, 0, 1) + bson.encode(reply)
                conn.sendall(struct.pack("<iiii", 16 + len(out), 1, rid, 1) + out)
            else:
                out = struct.pack("<I", 0) + b"\0" + bson.encode(reply)
                conn.sendall(struct.pack("<iiii", 16 + len(out), 1, rid, 2013) + out)
    except (ConnectionError, OSError):
        conn.close()
