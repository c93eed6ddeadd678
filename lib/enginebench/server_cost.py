"""`make server-cost`: what a server's own layer costs per operation, which an embedded run leaves out.

On the embedded target the engines run inside the runner: no command is parsed, planned, locked
or sent over a socket. mongod did all of that for every request of the posts, at a cost the same
for both engines, so the posts' ratios sit nearer 1 than the engines' own. This measures that
cost where it can be measured here: each experiment's smoke systems, with seconds of work per
phase (bench.FAMILY_WORK, CLIENT_WORK), on the uri target against the stand-in server started
for it (mongo-java-server on H2: standin.py), through the same client; the server process's CPU
(every thread, read by the runs' own sampler every SAMPLE_S) over each phase, per operation as
the report counts operations (the phase's per-op denominator: a LinkBench load counts
documents, its query phase requests).

It is an upper bound on mongod's own layer: the stand-in's figure includes its storage engine and
its runtime's costs (the JVM's JIT and collector). The posts give no figure for mongod's layer
alone (the LinkBench post's cpu/o is the whole host's: mongod, its engine and the client).
The figures go to data/results/server_cost/<stamp>-<host>.json with their provenance; a report
reads the newest of its host (report/server_cost.py) and says how far such a layer would move
each ratio it applies to.
"""
from __future__ import annotations

import json
import socket
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
from .metrics.sampler import Sampler
from .paths import results_dir

SAMPLE_S = 0.2
# The stand-in idles for this long before each run: its CPU then (the JVM's housekeeping) is
# taken out of every phase's figure, which is the server's work for the operations alone.
IDLE_S = 2.0
# The experiments measured: one per family whose claims read rates or CPU per operation of a load
# or a `run` phase. Not Flashback (its claims are latencies; its replay keeps the recorded pace,
# which the stand-in cannot, and ran past 10 minutes) nor tokumx_read (a maximum over client sweeps).
EXPERIMENTS = ("linkbench_cached", "iibench_500m", "sysbench_cgroups", "tokumx_insert_10m")


def _host() -> str:
    return socket.gethostname().split(".")[0]


def folder() -> Path:
    return results_dir() / "server_cost"


class CpuTrace:
    """A process's CPU seconds (all its threads) with the wall time, read every SAMPLE_S by the
    runs' own sampler (metrics/sampler.py) over the process and its data folder."""

    def __init__(self, pid: int, data_dir: Path):
        # The folder's size is read once at each end, not every SAMPLE_S.
        self.sampler = Sampler([pid], data_dir, SAMPLE_S, size_every=10**9)

    @property
    def points(self) -> list[tuple[float, float]]:
        return [(s["t"], s["cpu_user_s"] + s["cpu_sys_s"]) for s in self.sampler.samples]

    def __enter__(self) -> "CpuTrace":
        self.sampler.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.sampler.stop()  # its last reading covers a phase that ended after the periodic ones

    def idle_rate(self) -> float:
        """CPU seconds per second over the readings so far (taken while the server idles)."""
        points = self.points
        (t0, c0), (t1, c1) = points[0], points[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0

    def between(self, t0: float, t1: float) -> float | None:
        """CPU seconds used from t0 to t1, interpolated between the readings around each."""
        points = self.points
        if len(points) < 2 or t0 < points[0][0] or t1 > points[-1][0]:
            return None
        return _at(points, t1) - _at(points, t0)


def _at(points: list[tuple[float, float]], t: float) -> float:
    for (ta, ca), (tb, cb) in zip(points, points[1:]):
        if ta <= t <= tb:
            return ca if tb == ta else ca + (cb - ca) * (t - ta) / (tb - ta)
    return points[-1][1]


def per_op(run_dir: Path, trace: CpuTrace, idle_rate: float) -> list[dict]:
    """Per system and phase of a uri-target run: the server's CPU over the phase's intervals
    (the time its operations were counted in), less its idle rate, per operation two ways: per
    the phase's per-op denominator (as cpu/o counts: a LinkBench load's node inserts) and per
    operation its rate counts (the load's documents)."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    intervals = pl.read_parquet(run_dir / "intervals.parquet")
    rows = []
    for label, info in manifest["systems"].items():
        if info.get("status") != "complete":
            continue
        for (phase,), part in intervals.filter(pl.col("system") == label).group_by(["phase"], maintain_order=True):
            t0, t1 = float(part["t_start"].min()), float(part["t_end"].max())
            cpu = trace.between(t0, t1)
            denominator, counted = float(part["per_op_denominator"].sum()), float(part["ops"].sum())
            if cpu is None or not denominator or not counted:
                continue
            work = max(0.0, cpu - idle_rate * (t1 - t0))
            rows.append({"experiment": manifest["experiment"], "family": manifest["params"]["workload"]["name"],
                         "system": label, "phase": phase, "ops": counted, "per_op_denominator": denominator,
                         "seconds": t1 - t0, "server_cpu_s": cpu, "idle_cpu_s": cpu - work,
                         "server_cpu_us_per_op": work * 1e6 / denominator,
                         "server_cpu_us_per_counted_op": work * 1e6 / counted})
    return rows


def measure(experiments: tuple[str, ...] = EXPERIMENTS, sets: list[str] | None = None) -> Path:
    """Each experiment on a fresh stand-in (its work raised to seconds per phase, or `sets`);
    the figures written; their path."""
    from . import bench, standin
    from .results.provenance import git_state, package_versions
    why = standin.missing()
    if why:
        raise RuntimeError(f"server-cost: the stand-in server cannot start here ({why})")
    rows = []
    stamp = datetime.now(timezone.utc)
    out = folder() / f"{stamp:%Y%m%d-%H%M%S}-{_host()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for exp in experiments:
        work = sets if sets is not None else bench.CLIENT_WORK.get(exp) or bench.FAMILY_WORK.get(exp)
        with tempfile.TemporaryDirectory() as logs, standin.standin_server(Path(logs)) as (uri, proc, dbpath), \
                bench._environment(ENGINEBENCH_URI=uri), CpuTrace(proc.pid, dbpath) as trace:
            time.sleep(IDLE_S)
            idle = trace.idle_rate()
            run_dir = bench._run(exp, "smoke", "uri", sets=work)
        rows += [{**row, "run": str(run_dir), "sets": work} for row in per_op(run_dir, trace, idle)]
        # Written after each experiment: a later one that fails leaves the earlier figures.
        out.write_text(json.dumps({"measured_at": stamp.isoformat(), "host": _host(),
                                   "server": "mongo-java-server on H2 (the stand-in, tools/standin)",
                                   "git": git_state(), "packages": package_versions(), "figures": rows,
                                   "experiments": list(experiments[:experiments.index(exp) + 1])}, indent=1))
    return out


def latest(host: str | None = None) -> dict | None:
    """The newest readable measurement of this host (names are <stamp>-<host>.json), or None:
    another machine's server costs what its own CPU makes it."""
    files = sorted(folder().glob("*.json"), reverse=True) if folder().is_dir() else []
    host = host or _host()
    for path in (f for f in files if f.stem.split("-", 2)[-1] == host):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # one being written, or cut short
        data["path"] = str(path)
        return data
    return None


def figure(measured: dict, experiment: str, family: str, phase: str, per: str = "op") -> tuple[float, str] | None:
    """The server's CPU per operation of a phase (`per`: "op", the per-op denominator, or
    "counted", what the rate counts), and the experiment it was measured on: this experiment's,
    else its family's (the same requests over another data size). The median over the systems:
    one server ran them all, so they differ only by noise and the data each left."""
    key = "server_cpu_us_per_op" if per == "op" else "server_cpu_us_per_counted_op"
    rows = measured.get("figures", [])
    for match in (lambda r: r["experiment"] == experiment, lambda r: r.get("family") == family):
        values = [r[key] for r in rows if match(r) and r["phase"] == phase and key in r]
        if values:
            return statistics.median(values), next(r["experiment"] for r in rows if match(r))
    return None


def print_figures(path: Path) -> None:
    data = json.loads(path.read_text())
    print(f"server cost per operation, {data['server']} ({path}):")
    print(f"{'experiment':20} {'system':12} {'phase':14} {'ops':>10} {'seconds':>8} {'server us/op':>13}")
    for r in data["figures"]:
        print(f"{r['experiment'][:20]:20} {r['system'][:12]:12} {r['phase'][:14]:14} {r['ops']:>10,.0f}"
              f" {r['seconds']:>8.1f} {r['server_cpu_us_per_op']:>13,.1f}")
