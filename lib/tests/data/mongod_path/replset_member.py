#!/usr/bin/env python3
"""A stand-in for a mongod replica-set member, for the cold-start tests (test_mongod_path_coldstart.py).
Not MongoDB: it keeps what the launcher's restart depends on, each part as the server's source has it.

- The replica-set configuration lives in the dbpath (a real member keeps it in local.system.replset):
  replSetInitiate writes it, a restart reads it back. A member whose own address (127.0.0.1:--port)
  is not in it answers isMaster as a member without a valid configuration, and never becomes
  primary: mongodb/mongo src/mongo/db/repl/is_master_response.cpp at
  6dcdd23dd37ef12c87e71cf59ef01cd82432efe0 (IsMasterResponse::addToBSON: `ismaster: false,
  secondary: false, info: "Does not have a valid replica set config", isreplicaset: true`; with a
  configuration: hosts, setName, setVersion, ismaster, secondary, primary, me).
- A port it cannot bind: the structured log line mongod writes and its exit code, mongodb/mongo
  src/mongo/db/mongod_main.cpp at 0045dc81dfadc33d60130dbb575a7a0a74305924 (component CONTROL,
  thread "initandlisten", `LOGV2_ERROR(20568, "Error setting up listener: {error}", "Error setting up
  listener", "error"_attr = res); return EXIT_NET_ERROR;`), EXIT_NET_ERROR = 48
  (src/mongo/util/exit_code.h), the error being the bind's SocketException (code 9001,
  src/mongo/base/error_codes.yml at 007ba93486927dc7162c9b0f9d719e86b87fd8fe) with asio's text for
  EADDRINUSE, serialized by Status::serialize as {code, codeName, errmsg} (src/mongo/base/status.cpp).
  Like mongod (transport_layer_asio.cpp: `acceptor.set_option(GenericAcceptor::reuse_address(true))`)
  it sets SO_REUSEADDR before binding.
- `shutdown` ends it (exit 0); STANDIN_IGNORE_SHUTDOWN=1 makes it ignore shutdown and SIGTERM, so
  that only SIGKILL stops it.
It is no release and prints no --version or --help: the tests tell the launcher what it is.
"""
import datetime
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

import bson

args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
stubborn = os.environ.get("STANDIN_IGNORE_SHUTDOWN") == "1"
if stubborn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
port = int(args["port"])
me = f"127.0.0.1:{port}"
dbpath = Path(args["dbpath"])
config_file = dbpath / "replset.json"
log = open(args["logpath"], "a")

server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    server.bind((args.get("bind_ip", "127.0.0.1"), port))
except OSError as exc:
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    log.write(json.dumps({"t": {"$date": now}, "s": "E", "c": "CONTROL", "id": 20568, "ctx": "initandlisten",
                          "msg": "Error setting up listener",
                          "attr": {"error": {"code": 9001, "codeName": "SocketException",
                                             "errmsg": os.strerror(exc.errno)}}}) + "\n")
    log.close()
    sys.exit(48)
server.listen(16)
log.write(f"stand-in member listening on {me}\n")   # the stand-in's own line, not mongod's
log.flush()


def is_master() -> dict:
    base = {"maxWireVersion": 21, "minWireVersion": 0, "maxBsonObjectSize": 16777216, "ok": 1.0}
    if "replSet" not in args:
        return {**base, "ismaster": True}
    config = json.loads(config_file.read_text()) if config_file.exists() else None
    hosts = [m["host"] for m in (config or {}).get("members", [])]
    if me not in hosts:
        return {**base, "ismaster": False, "secondary": False, "info": "Does not have a valid replica set config",
                "isreplicaset": True}
    return {**base, "hosts": hosts, "setName": config["_id"], "setVersion": 1, "ismaster": me == hosts[0],
            "secondary": me != hosts[0], "primary": hosts[0], "me": me}


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
                config_file.write_text(json.dumps(cmd["replSetInitiate"]))
            reply = is_master() if name.lower() in ("ismaster", "hello") else {"ok": 1.0}
            if op == 2004:
                out = struct.pack("<iqii", 0, 0, 0, 1) + bson.encode(reply)
                conn.sendall(struct.pack("<iiii", 16 + len(out), 1, rid, 1) + out)
            else:
                out = struct.pack("<I", 0) + b"\0" + bson.encode(reply)
                conn.sendall(struct.pack("<iiii", 16 + len(out), 1, rid, 2013) + out)
    except (ConnectionError, OSError):
        conn.close()
