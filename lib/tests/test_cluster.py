"""make all CLUSTER=...: a Dask cluster started here as separate processes on 127.0.0.1 (a
scheduler, and two workers each with its own results and data folders and its own host name),
the collection over two smoke experiments, a worker killed mid-unit (its unit reported lost and
re-run alone), the results merged, and the page made from them naming the hosts."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from enginebench import collection
from enginebench.cluster import RESOURCE
from enginebench.cluster.placement import Unit, next_unit
from enginebench.cluster.transfer import pack, unpack

ROOT = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).with_name("dask")
# The two quickest smoke experiments (about 25 s each, every system of each).
KILLED, KEPT = "iibench_500m", "tokumx_insert_10m"
HOSTS = ("eb-host-a", "eb-host-b")
START_TIMEOUT_S = 60


def _until(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


class LocalCluster:
    """`dask scheduler` and `dask worker`s, each in a process group of its own, so a kill takes a
    worker with the experiment it is running; everything listens on 127.0.0.1 only."""

    def __init__(self, base: Path):
        self.base = base
        self.groups: dict[str, subprocess.Popen] = {}
        file = base / "scheduler.json"
        # A unit whose worker dies fails at once instead of being run again elsewhere.
        env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"}
        self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)], env)
        self.address = _until(lambda: file.is_file() and json.loads(file.read_text() or "{}").get("address"),
                              START_TIMEOUT_S, "the scheduler's address")

    def _start(self, name: str, command: list[str], env: dict) -> None:
        log = open(self.base / f"{name}.log", "a")
        self.groups[name] = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.base)
        log.close()

    def folder(self, host: str) -> Path:
        return self.base / host

    def start_worker(self, host: str) -> None:
        folder = self.folder(host)
        env = {**os.environ, "ENGINEBENCH_HOST_NAME": host, "ENGINEBENCH_RESULTS": str(folder / "results"),
               "ENGINEBENCH_DATA": str(folder / "data"), "ENGINEBENCH_REPORTS": str(folder / "reports")}
        self._start(host, [str(DASK), "worker", self.address, "--host", "127.0.0.1", "--nthreads", "1",
                           "--resources", f"{RESOURCE}=1", "--no-nanny", "--no-dashboard", "--dashboard-address",
                           "127.0.0.1:0", "--local-directory", str(folder / "dask"), "--name", host], env)

    def wait_for_workers(self, hosts) -> None:
        from distributed import Client
        with Client(self.address, timeout="20s", set_as_default=False) as client:
            client.wait_for_workers(len(hosts), timeout=START_TIMEOUT_S)

    def kill(self, name: str) -> None:
        process = self.groups.pop(name)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def close(self) -> None:
        for name in list(self.groups):
            self.kill(name)


@pytest.fixture
def cluster(tmp_path):
    local = LocalCluster(tmp_path)
    try:
        for host in HOSTS:
            local.start_worker(host)
        local.wait_for_workers(HOSTS)
        yield local
    finally:
        local.close()


def _make_all(cluster, env: dict, experiments: str) -> subprocess.Popen:
    return subprocess.Popen(["make", "-s", "--no-print-directory", "all", f"PY={sys.executable}", "SCALE=smoke",
                             "TARGET=embedded", f"CLUSTER={cluster.address}", f"EXPERIMENTS={experiments}"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _finish(process: subprocess.Popen, timeout_s: float = 240) -> str:
    try:
        out, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        raise AssertionError(f"make all did not finish in {timeout_s} s:\n{out}")
    return out


def _runs(results: Path, exp: str) -> list[Path]:
    return sorted(p.parent for p in (results / exp).glob("*/manifest.json"))


def _ledger(results: Path) -> dict:
    newest = sorted((results / "cluster").glob("*.json"))[-1]
    return json.loads(newest.read_text())["units"]


def _processes_of(host: str) -> list[psutil.Process]:
    """The processes still running with this host's name (its worker, experiment, runners)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("ENGINEBENCH_HOST_NAME") == host:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_make_all_on_a_cluster_merges_reports_a_lost_unit_and_reruns_only_it(cluster, tmp_path, monkeypatch):
    submit = tmp_path / "submit"
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(submit / "results"), "ENGINEBENCH_REPORTS": str(submit / "reports"),
           "ENGINEBENCH_DATA": str(submit / "data")}
    results = submit / "results"
    started = _make_all(cluster, env, f"{KEPT},{KILLED}")
    try:
        # Mid-unit: the killed experiment's run folder has appeared on its host, which is then
        # killed with everything it runs (its process group).
        def running_on():
            return next((h for h in HOSTS if _runs(cluster.folder(h) / "results", KILLED)), None)
        victim = _until(running_on, 120, f"{KILLED}'s run folder on a host")
        survivor = next(h for h in HOSTS if h != victim)
        cluster.kill(victim)
        out = _finish(started)
    finally:
        if started.poll() is None:
            os.killpg(started.pid, signal.SIGKILL)
    assert started.returncode == 2 and "Error 1" in out, out  # the command failed with 1, which make reports as 2
    units = _ledger(results)
    assert units[f"{KILLED}-1"]["status"] == "lost" and units[f"{KILLED}-1"]["host"] == victim, units
    assert f"{victim}" in units[f"{KILLED}-1"]["error"] and "died or left the cluster" in units[f"{KILLED}-1"]["error"]
    assert units[f"{KEPT}-1"]["status"] == "complete" and units[f"{KEPT}-1"]["host"] == survivor, units
    assert f"{KILLED}-1 lost on {victim}" in out
    assert f"re-run it alone: make all SCALE=smoke CLUSTER={cluster.address} EXPERIMENTS={KILLED}" in out
    # The killed host left nothing running, and its unit's run is not in the merged results.
    _until(lambda: not _processes_of(victim), 20, f"{victim}'s processes to end")
    assert _runs(results, KILLED) == []
    # The kept unit's run folder came back whole, as a local run's, its provenance naming its host.
    (kept,) = _runs(results, KEPT)
    manifest = json.loads((kept / "manifest.json").read_text())
    assert manifest["status"] == "complete" and kept.name.endswith(survivor)
    assert manifest["host"]["hostname"] == survivor and manifest["host"]["speed"]["start"]["docs_per_s"] > 0
    assert (kept / "report.html").is_file() and (kept / "summary.json").is_file()
    assert sorted(p.name for p in kept.iterdir()) == sorted(p.name for p in _runs(cluster.folder(survivor) / "results", KEPT)[0].iterdir())

    # The lost unit re-run alone, on a host that comes back: nothing else runs again.
    cluster.start_worker(victim)
    cluster.wait_for_workers(HOSTS)
    again = _make_all(cluster, env, KILLED)
    out = _finish(again)
    assert again.returncode == 0, out
    assert "1 unit(s) on 2 host(s)" in out and "1 of 1 unit(s) complete" in out
    units = _ledger(results)
    assert list(units) == [f"{KILLED}-1"] and units[f"{KILLED}-1"]["status"] == "complete"
    (rerun,) = _runs(results, KILLED)
    assert json.loads((rerun / "manifest.json").read_text())["status"] == "complete"
    assert [len(_runs(cluster.folder(h) / "results", KEPT)) for h in HOSTS].count(1) == 1, "the kept unit ran once"
    assert _runs(results, KEPT) == [kept]

    # One page over both hosts' runs, the same shape as a local run's, each host named.
    page = (submit / "reports" / "index.html").read_text()
    rows = json.loads((submit / "reports" / "claims.json").read_text())
    hosts = {json.loads((r / "manifest.json").read_text())["host"]["hostname"] for r in (kept, rerun)}
    assert {r["host"] for r in rows if r["run_id"]} == hosts and all(h in page for h in hosts)
    assert "host, hardware" in page and "Every claim" in page
    assert {r["experiment"] for r in rows if r["run_id"]} == {KEPT, KILLED}

    # Resumed from the same code and params (as a clean clone would see them), nothing is sent.
    for run in (kept, rerun):
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["git"]["dirty"] = False
        (run / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(collection, "git_state", lambda: {"sha": manifest["git"]["sha"], "dirty": False})
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(results))
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(submit / "reports"))
    from enginebench.cluster.submit import run_on_cluster
    _, ledger = run_on_cluster(cluster.address, "smoke", "embedded", only=f"{KEPT},{KILLED}")
    assert ledger["units"] == {}


def test_bad_input_is_refused_before_anything_starts(tmp_path):
    from enginebench.cluster.submit import check_cluster, connect
    with pytest.raises(ValueError, match=r"CLUSTER='nope': not a scheduler address"):
        connect("nope")
    # A scheduler that would run a lost unit again elsewhere (Dask's default) is refused.
    file = tmp_path / "scheduler.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    scheduler = subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        address = _until(lambda: file.is_file() and json.loads(file.read_text() or "{}").get("address"),
                         START_TIMEOUT_S, "the scheduler's address")
        client = connect(address)
        try:
            with pytest.raises(ValueError, match=r"ALLOWED_FAILURES=0"):
                check_cluster(client, address, None)
        finally:
            client.close()
    finally:
        os.killpg(scheduler.pid, signal.SIGKILL)
        scheduler.wait(timeout=30)
    with pytest.raises(ValueError, match=r"EXPERIMENTS: unknown experiment 'nope'; allowed: .*iibench_500m"):
        collection.chosen_experiments("iibench_500m,nope")
    out = subprocess.run([sys.executable, "-m", "enginebench", "all", "--scale", "smoke", "--cluster",
                          "tcp://127.0.0.1:9", "--experiments", "nope"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "EXPERIMENTS: unknown experiment 'nope'" in out.stderr


def test_repeats_go_to_hosts_that_have_not_run_the_experiment():
    waiting = [Unit("a", 1), Unit("a", 2), Unit("b", 1)]
    ran = {"a": {"h1"}}
    # h1 ran a already: it takes b; h2 takes a repeat; once every live host ran a, anyone may.
    assert next_unit(waiting, "h1", ran, {"h1", "h2"}) == Unit("b", 1)
    assert next_unit(waiting, "h2", ran, {"h1", "h2"}) == Unit("a", 1)
    assert next_unit([Unit("a", 2)], "h1", ran, {"h1", "h2"}) is None
    assert next_unit([Unit("a", 2)], "h1", {"a": {"h1", "h2"}}, {"h1", "h2"}) == Unit("a", 2)


def test_a_packed_run_lands_in_its_place_and_never_over_another(tmp_path):
    run = tmp_path / "host" / "exp" / "20260101-000000-h"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"run_id": run.name, "started_at": "t1"}))
    (run / "sys").mkdir()
    (run / "sys" / "events.jsonl").write_text("{}\n")
    results = tmp_path / "results"
    folder, new = unpack(pack(run), results)
    assert new and folder == results / "exp" / run.name and (folder / "sys" / "events.jsonl").read_text() == "{}\n"
    assert unpack(pack(run), results) == (folder, False)  # the same run merged twice is kept once
    (run / "manifest.json").write_text(json.dumps({"run_id": run.name, "started_at": "t2"}))
    with pytest.raises(ValueError, match="already holds another run"):
        unpack(pack(run), results)
    assert json.loads((folder / "manifest.json").read_text())["started_at"] == "t1"
    assert sorted(p.name for p in (results / "exp").iterdir()) == [run.name]


def _host_run(results: Path, host: str, run_id: str, ratio: float, verdict: str, probe: int) -> Path:
    """A complete iibench_500m run of host whose report showed one claim at ratio: the page reads
    only the manifest's provenance and summary.json's verdicts, which are written here."""
    run = results / "iibench_500m" / run_id
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({
        "run_id": run_id, "experiment": "iibench_500m", "scale": "default", "status": "complete",
        "target": {"kind": "embedded"}, "params": {},
        "host": {"hostname": host, "cpu_model": "CPU of " + host, "logical_cpus": 8, "memory_bytes": 32 * 2**30,
                 "speed": {"start": {"docs_per_s": probe}}}}))
    (run / "summary.json").write_text(json.dumps({"claims": [{
        "id": "ib.query.btree_vs_lsm", "claim": "", "expect": "greater than 1", "metric": "query_rate",
        "published_ratio": 4.59, "measured_ratio": ratio, "verdict": verdict, "reason": "", "from": f"wt / rx on {host}",
        "size": "", "swing": None, "systems": "wt,rx"}]}))
    return run


@pytest.mark.parametrize("ratios, verdicts, over_all", [
    ((4.4, 4.8), ("holds", "holds"), "holds"),
    ((1.3, 0.8), ("holds", "does not hold"), "inconclusive"),
])
def test_the_page_gives_each_hosts_verdict_and_one_over_all_hosts(tmp_path, monkeypatch, ratios, verdicts, over_all):
    from enginebench.report.collection import ALL_HOSTS, claim_rows, page_rows, claims_section
    results = tmp_path / "results"
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(results))
    for host, stamp, ratio, verdict, probe in zip(HOSTS, ("20260101-000000", "20260101-000100"), ratios, verdicts,
                                                  (300_000, 400_000)):
        _host_run(results, host, f"{stamp}-{host}", ratio, verdict, probe)
    rows = [r for r in claim_rows() if r["claim_id"] == "ib.query.btree_vs_lsm"]
    per_host = {r["host"]: r for r in rows if r["host"] != ALL_HOSTS}
    assert {h: (r["verdict"], r["measured_ratio"]) for h, r in per_host.items()} == dict(zip(HOSTS, zip(verdicts, ratios)))
    assert per_host[HOSTS[1]]["hardware"] == f"CPU of {HOSTS[1]}, 8 CPUs, 32 GiB, probe 400k docs/s"
    (combined,) = [r for r in rows if r["host"] == ALL_HOSTS]
    assert combined["verdict"] == over_all and combined["hosts"] == 2
    assert combined["measured_ratio"] == pytest.approx(sum(ratios) / 2)
    assert combined["host_spread"].startswith(f"ratio {min(ratios):.2f} to {max(ratios):.2f} between hosts, CV ")
    assert all(f"{h}: {v} at {r:.2f}" in combined["per_host"] for h, v, r in zip(HOSTS, verdicts, ratios))
    # The page shows the row over all hosts, with each host's verdict and hardware beside it.
    (shown,) = page_rows(rows)
    assert shown["host"] == ALL_HOSTS
    text = claims_section(rows, tmp_path)
    assert f"over 2 hosts, ratio {min(ratios):.2f}" in text and all(f"CPU of {h}" in text for h in HOSTS)


def test_a_host_named_by_its_environment_names_its_runs(monkeypatch, tmp_path):
    from enginebench.results.owner import hostname
    from enginebench.results.provenance import host_facts
    monkeypatch.setenv("ENGINEBENCH_HOST_NAME", "lab-7")
    assert hostname() == "lab-7"
    facts = host_facts(tmp_path)
    assert facts["hostname"] == "lab-7" and facts["machine"]
    monkeypatch.setenv("ENGINEBENCH_HOST_NAME", "../x")  # it names folders and cgroups
    with pytest.raises(ValueError, match=r"ENGINEBENCH_HOST_NAME='../x': letters, digits and '-' only"):
        hostname()
