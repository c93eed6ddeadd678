"""Whose code the runner's CPU went to: the engines', ours, the C library's, the kernel's.

The native runner should spend its CPU in the engines; `perf record -e cpu-clock` samples its
threads (no hardware counters needed, which virtual machines often lack) and each sample is
attributed by the code it landed in:

  engine   the engines' libraries and the compression libraries they call (WiredTiger, snappy,
           zstd, lz4, zlib, lzma, and RocksDB and LMDB, which are linked into the runner: their
           symbols, RocksDB's C++ and C, LMDB's mdb_*; PerconaFT, linked into its release's shim
           libeb_ft_<release>.so: every symbol there but the shim's own eb_ft_*), and
           tcmalloc, the allocator the engines run on as in mongod: the runner's own Rust code
           allocates from another one compiled into it (mimalloc, main.rs), so a tcmalloc sample
           is an engine's allocation (or its C++ runtime's, for RocksDB)
  driver   on a server target, the MongoDB driver the runner links (its wire protocol, BSON,
           TLS and async runtime): the client's own work of talking to the server
  runner   everything else in the runner binary: the workloads, the layouts, the recorder, and
           their allocator; the fractal shim's eb_ft_* functions (TokuMX's key comparator among them:
           it was TokuMX's code, called by the engine)
  libc     the C library and the C++ runtime, called by either side (memcpy, memcmp, locks)
  kernel   system calls, page faults, reads from the page cache, scheduling
The C library's time is mostly called by the others (RocksDB's key comparisons are libc's memcmp,
copies are memmove), and so are many system calls (RocksDB's journal writes and block reads):
`engine_with_calls` also charges each libc or kernel sample to the first frame of its call chain
outside both, so it reads "the engine and the C library and system calls it makes", and
`harness_with_calls` the same for the runner's own code and the driver: what the harness costs,
all in. A chain perf cannot walk (a library built without frame pointers, as snappy's and libc's
own are) leaves its sample where it landed, so both are lower bounds.

`engine_with_calls` is the headline figure everywhere (what the engine would cost a server that
called it the same way), with the strict `engine` beside it, named; thresholds are judged by it
where perf recorded call chains, else by the strict figure. engine_with_calls / (1 -
harness_with_calls) is what it would be with no harness at all, the most any cut of ours can
bring it to (`ceiling`), and `harness_top` names the harness functions the rest went to (the
first frame outside the C library and the kernel, as for the with-calls figures).

The engine share is what the reports show next to CPU per operation; a run whose engine share
is below ENGINE_SHARE_MIN measures its harness as much as its engine, and its CPU and
context-switch figures are "not comparable" (docs/running.md: "What runs natively").
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

ENGINE_SHARE_MIN = 0.5
HARNESS_TOP = 5   # how many of the harness's functions `harness_top` names
SAMPLE_HZ = 499
ENGINE_LIBRARIES = re.compile(r"lib(wiredtiger|snappy|zstd|lz4|z|bz2|lzma|lmdb|rocksdb|tcmalloc\w*)[-._]")
LIBC = re.compile(r"lib(c|m|stdc\+\+|gcc_s|pthread)[-._]|ld-linux|\[vdso\]")
# The Rust MongoDB driver and the crates it runs on, by their symbols' paths (legacy mangling
# keeps the crate name: `mongodb::client::...`, `_ZN7mongodb6client...`).
DRIVER_CRATES = ("mongodb", "bson", "tokio", "rustls", "ring", "hickory_resolver", "hickory_proto",
                 "serde_bytes", "bytes")
# RocksDB's C code compiled into the runner from librocksdb.a (nm names the object files): the
# xxHash it bundles (xxhash.cc.o, hash.cc.o: its exported functions carry a ROCKSDB_ prefix, its
# static helpers such as XXH3_hashLong_64b_default do not) and its C API's helpers (c.cc.o).
ROCKSDB_C_SYMBOL = re.compile(r"^(ROCKSDB_)?XXP?H(3|32|64|128)?_|^(CopyString|SaveError)\b")
# LMDB compiled into the runner from tools/build_lmdb.sh's liblmdb.a: every function of mdb.c and
# midl.c, static ones included, is named mdb_* (a clone keeps the name: mdb_page_get.isra.0).
LMDB_SYMBOL = re.compile(r"^mdb_")
DRIVER_SYMBOL = re.compile(r"(^|[<\s(&])(%s)::|_ZN\d+(%s)\d" % ("|".join(DRIVER_CRATES), "|".join(DRIVER_CRATES)))


# perf 6.1 took 0.87 s to exit after SIGINT whatever the recording's length, in a phase's end,
# before the next phase's recording could start: joining the thread that records BPF programs'
# loads (--no-bpf-event: none of ours is BPF) and then reading the whole file back for the
# build ids of the libraries it sampled (-B; `perf script` reads the file at once, from the same
# paths) to copy them into ~/.debug (-N). With the three, 0.00-0.12 s: a smoke run of
# tokumx_concurrency (28 phases) took 12.6 s against 38.7, and the probe below 0.2 s against 1.2.
RECORD_QUICK_EXIT = ("--no-bpf-event", "-B", "-N")


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(whether perf can sample a process of ours here, why not); probed once per process."""
    perf = shutil.which("perf")
    if perf is None:
        return False, "perf is not installed (Debian package linux-perf)"
    try:
        probe = subprocess.run([perf, "record", "-q", "-a", "-e", "cpu-clock", *RECORD_QUICK_EXIT, "-o", "/dev/null",
                                "--", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"perf could not run: {exc}"
    if probe.returncode != 0:
        return False, (f"perf record -a (every CPU, the runner's samples kept) is not permitted here "
                       f"(kernel.perf_event_paranoid must be 0 or less, or run as root): {probe.stderr.strip()[-200:]}")
    return True, ""


class Profiler:
    """Samples one process from `start` to `stop` into a perf.data file.

    perf samples every CPU (-a) and the process's samples are picked out when read (`perf script
    --pid`), not through `perf record -p`: attached to a process by pid, perf 6.1 spins on poll()
    once any thread that existed when it attached exits (the event's file reports a hang-up it
    never stops polling), taking both cores of a 2-core machine from the engine it measures.
    WiredTiger 2.5's eviction workers come and go: a LinkBench load on mongodb-3.0.7's tree fell
    from 60,000 to 1,000-2,000 documents/s while perf spun at 200% CPU, and rose back to 70,000
    when it was stopped."""

    def __init__(self, pid: int, path: Path):
        self.path = path
        self.pid = pid
        # -g: frame-pointer call chains, for charging the C library's samples to their callers.
        # RECORD_QUICK_EXIT: what the samples are does not change; perf's exit does.
        self.proc = subprocess.Popen(["perf", "record", "-q", "-a", "-e", "cpu-clock", "-F", str(SAMPLE_HZ), "-g",
                                      *RECORD_QUICK_EXIT, "-o", str(path)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self, runner_binary: str | None = None) -> dict:
        if self.proc.poll() is None:
            # perf writes its file and exits on SIGINT, once its handler is in place: sent before
            # that (a phase shorter than perf's start), the signal killed it with nothing written,
            # or, where SIGINT was ignored when it started (a run under nohup or `&`), was lost and
            # perf recorded on for the minute below, holding up every event behind it.
            handler_ready(self.proc)
            self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return {"error": "no samples (a phase shorter than perf takes to attach)"}
        try:
            return shares(self.path, runner_binary, self.pid)
        finally:
            self.path.unlink(missing_ok=True)


HANDLER_WAIT_S = 10.0


def catches(pid: int, signum: int) -> bool:
    """Whether process pid has a handler of its own for signum (its SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    found = re.search(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M)
    return bool(found) and bool(int(found.group(1), 16) >> (signum - 1) & 1)


def handler_ready(proc: subprocess.Popen, wait_s: float = HANDLER_WAIT_S) -> bool:
    """Waits until the process catches SIGINT (or has exited, or wait_s passed); whether it does."""
    deadline = time.monotonic() + wait_s
    while proc.poll() is None and time.monotonic() < deadline:
        if catches(proc.pid, signal.SIGINT):
            return True
        time.sleep(0.01)
    return False


@functools.lru_cache(maxsize=None)  # one entry per distinct (library, symbol): thousands in a profile
def classify(dso: str, symbol: str, runner_binary: str | None) -> str:
    if dso == "[kernel.kallsyms]" or dso.startswith("[kernel"):
        return "kernel"
    if ENGINE_LIBRARIES.search(dso):
        return "engine"
    if LIBC.search(dso):
        return "libc"
    name = os.path.basename(dso).replace(" (deleted)", "")
    if name.startswith("libeb_ft"):
        return "runner" if symbol.startswith("eb_ft_") else "engine"
    if runner_binary and name == os.path.basename(runner_binary) or name.startswith("enginebench-runner") \
            or name.startswith("libeb_wt"):
        # RocksDB and LMDB are linked into the runner: RocksDB's code is its own namespace and C
        # API, LMDB's its mdb_ functions (our adapters, enginebench_runner::engines::*, are ours).
        signature = symbol.split("(")[0]
        ours = "enginebench_runner" in signature
        if not ours and (symbol.startswith(("rocksdb::", "rocksdb_")) or "rocksdb::" in signature
                         or ROCKSDB_C_SYMBOL.match(symbol) or LMDB_SYMBOL.match(symbol)):
            return "engine"
        return "driver" if not ours and DRIVER_SYMBOL.search(signature) else "runner"
    return "other"


def shares(path: Path, runner_binary: str | None = None, pid: int | None = None) -> dict:
    """{'engine', 'driver', 'runner', 'libc', 'kernel', 'other': fractions of samples by the code each one
    landed in, 'samples': n, and 'engine_with_calls' and 'harness_with_calls' when perf recorded
    call chains}; of process `pid`'s samples only, when given (a recording of every CPU; perf
    script's own --pid filter drops most of a process's samples when the process existed before the
    recording started, so the filter is ours)."""
    script = subprocess.run(["perf", "script", "-i", str(path), "-F", "pid,tid,ip,sym,dso"],
                            capture_output=True, text=True, timeout=600)
    return shares_of_script(script.stdout, runner_binary, pid)


FRAME = re.compile(r"^\s*[0-9a-f]+ (.*) \((.*)\)$")


def samples_of_script(script: str, pid: int | None = None):
    """Each sample of `perf script -F pid,tid,ip,sym,dso` output as its frames, leaf first, each a
    (symbol, library) pair; of process `pid` only, when given. A sample starts with a line holding
    its `pid/tid` (and, without call chains, its one frame); its call chain follows on tab-indented
    lines. (`-F tid,...` output, a thread id alone, is read too: no pid to filter on.)"""
    frames = None
    for line in script.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t"):
            if frames is not None:
                yield frames
            ids, _, line = line.strip().partition(" ")
            of_process = ids.partition("/")[0] if "/" in ids else None
            keep = pid is None or of_process is None or of_process == str(pid)
            frames = [] if keep else None
        match = FRAME.match(line)
        if match and frames is not None:
            frames.append((match.group(1), match.group(2)))
    if frames is not None:
        yield frames


def shares_of_script(script: str, runner_binary: str | None = None, pid: int | None = None) -> dict:
    """shares() over perf script's text. A sample counts for the code of its leaf frame; for
    engine_with_calls, a C library or kernel sample counts for its first caller outside both."""
    totals = {"engine": 0, "driver": 0, "runner": 0, "libc": 0, "kernel": 0, "other": 0}
    with_calls = harness = chained = 0
    harness_functions: Counter[str] = Counter()
    for frames in samples_of_script(script, pid):
        kinds = [classify(dso, symbol, runner_binary) for symbol, dso in frames] or ["other"]
        totals[kinds[0]] += 1
        chained += len(kinds) > 1
        at = next((i for i, kind in enumerate(kinds) if kind not in ("libc", "kernel")), None)
        caller = kinds[at] if at is not None else "libc"
        with_calls += caller == "engine"
        if caller in ("runner", "driver"):
            harness += 1
            harness_functions[frames[at][0]] += 1
    samples = sum(totals.values())
    if samples == 0:
        return {"error": "no samples (a phase shorter than perf takes to attach)"}
    out = {k: v / samples for k, v in totals.items()}
    out["samples"] = samples
    if chained:
        out["engine_with_calls"] = with_calls / samples
        out["harness_with_calls"] = harness / samples
        out["ceiling"] = with_calls / (samples - harness) if samples > harness else None
        out["harness_top"] = [[name, n / samples] for name, n in harness_functions.most_common(HARNESS_TOP)]
    return out


def headline(share: dict) -> float | None:
    """The engine's share a threshold or a headline reads: with the calls it makes where perf
    recorded call chains, else its own frames."""
    value = share.get("engine_with_calls")
    return value if value is not None else share.get("engine")
