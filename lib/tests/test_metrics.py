import pytest

from enginebench.metrics.normalize import interpolate, interval_metrics, per_op
from enginebench.metrics.sampler import dir_size, process_counters


def samples():
    # Two seconds apart: 100 reads/s, 4 KiB each; 1.5 CPU s/s; 50 context switches/s.
    return [{"t": 10.0 + 2 * i, "dev_reads": 200 * i, "dev_read_bytes": 819200 * i, "dev_writes": 10 * i,
             "dev_write_bytes": 40960 * i, "cpu_user_s": 2.0 * i, "cpu_sys_s": 1.0 * i,
             "ctx_switches": 100 * i, "proc_read_bytes": 0, "proc_write_bytes": 20480 * i,
             "rss_bytes": (1 + i) << 20, "size_du_bytes": 1000 * i, "size_apparent_bytes": 900 * i}
            for i in range(6)]


def test_interpolation_between_and_beyond_samples():
    s = samples()
    assert interpolate(s, "dev_reads", 11.0) == pytest.approx(100)
    assert interpolate(s, "dev_reads", 5.0) == 0
    assert interpolate(s, "dev_reads", 99.0) == 1000
    assert interpolate([], "dev_reads", 1.0) is None


def test_interval_deltas_and_per_op_figures():
    deltas = interval_metrics(samples(), 11.0, 17.0)  # 6 s
    assert deltas["dev_reads"] == pytest.approx(600)
    assert deltas["cpu_user_s"] + deltas["cpu_sys_s"] == pytest.approx(9.0)
    assert deltas["rss_bytes"] == 4 << 20  # the peak of the samples inside the interval
    assert deltas["size_du_bytes"] == 3000  # the size sampled nearest the end (16 s; 18 s is as near)
    m = per_op(deltas, ops=1200, seconds=6.0)
    assert m["ops_per_s"] == pytest.approx(200)
    assert m["r_per_op"] == pytest.approx(0.5)
    assert m["rkb_per_op"] == pytest.approx(2.0)        # 0.5 reads x 4 KiB
    assert m["wkb_per_op"] == pytest.approx(60 / 1200)      # the process's own: 6 s x 10 KiB/s
    assert m["device_wkb_per_op"] == pytest.approx(120 / 1200)  # the device's, other writers included
    assert m["cs_per_op"] == pytest.approx(300 / 1200)
    assert m["cpu_us_per_op"] == pytest.approx(9.0e6 / 1200)
    assert m["read_iops"] == pytest.approx(100)


def test_a_phase_shorter_than_a_sampling_period_gets_the_size_read_at_its_end():
    """The sample before a short phase's end may predate its writes; the one the driver asks for
    as the phase ends (Sampler.sample_now) is the phase's size."""
    before = {"t": 10.0, "size_du_bytes": 0, "size_apparent_bytes": 0}
    at_end = {"t": 10.32, "size_du_bytes": 5 << 20, "size_apparent_bytes": 5 << 20}
    assert interval_metrics([before, at_end], 10.05, 10.3)["size_du_bytes"] == 5 << 20


def test_sample_now_adds_a_sample_between_scheduled_ones(tmp_path):
    import os
    import time
    from enginebench.metrics.sampler import Sampler
    sampler = Sampler([os.getpid()], tmp_path, interval_s=30.0)
    sampler.start()
    try:
        deadline = time.time() + 10
        while not sampler.samples and time.time() < deadline:
            time.sleep(0.01)
        sampler.sample_now()
        while len(sampler.samples) < 2 and time.time() < deadline:
            time.sleep(0.01)
        assert len(sampler.samples) == 2, "the extra sample came within seconds, not at the 30 s schedule"
    finally:
        sampler.stop()
    # stop() adds the last one, with the files' size: the size after the engine closed.
    assert len(sampler.samples) == 3 and "size_du_bytes" in sampler.samples[-1]


def test_normaliser_divides_per_op_but_not_the_rate():
    m = per_op({"dev_reads": 10, "ctx_switches": 40}, ops=400, seconds=2, normaliser=100)
    assert m["ops_per_s"] == 200 and m["r_per_op"] == 0.1 and m["cs_per_op"] == 0.4


def test_missing_counters_give_none_not_zero():
    m = per_op({"dev_reads": None}, ops=10, seconds=1)
    assert m["r_per_op"] is None and m["cpu_us_per_op"] is None


def test_dir_size_counts_allocated_and_apparent(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 10000)
    sparse = tmp_path / "sparse"
    with open(sparse, "wb") as fh:
        fh.seek(1 << 20)
        fh.write(b"y")
    used, apparent = dir_size(tmp_path)
    assert apparent == 10000 + (1 << 20) + 1
    assert 10000 <= used < apparent


def test_exited_process_keeps_its_last_counters():
    import os
    seen = {}
    first = process_counters([os.getpid()], seen)
    fake_pid = 2**22 + 12345
    seen[fake_pid] = dict(first)
    again = process_counters([os.getpid(), fake_pid], seen)
    assert again["cpu_user_s"] >= 2 * first["cpu_user_s"] * 0.99
    assert again["rss_bytes"] >= first["rss_bytes"] * 0.5  # the exited one adds no RSS


def test_context_switches_are_every_threads_and_outlive_the_threads():
    """psutil's num_ctx_switches reads /proc/<pid>/status: the main thread's alone. A process whose
    work runs on other threads (every engine's) must be counted thread by thread, and a thread's
    switches must stay counted after it exits."""
    import os
    import resource
    import threading
    import time

    import psutil

    # Each worker sleeps, then waits alive until it has been sampled: what a thread does between
    # its last sample and its exit is not counted, and on a busy host that would be most of it.
    slept, sampled = threading.Semaphore(0), threading.Event()

    def sleeper():
        for _ in range(300):
            time.sleep(0.0005)  # each sleep is a voluntary switch of this thread
        slept.release()
        sampled.wait()
    seen: dict[int, dict[int, int]] = {}
    before = process_counters([os.getpid()], None, seen)["ctx_switches"]
    main_before = sum(psutil.Process().num_ctx_switches())
    workers = [threading.Thread(target=sleeper) for _ in range(3)]
    for worker in workers:
        worker.start()
    for _ in workers:
        slept.acquire()
    during = process_counters([os.getpid()], None, seen)  # the workers are sampled alive...
    sampled.set()
    for worker in workers:
        worker.join()
    after = process_counters([os.getpid()], None, seen)   # ...and still counted after they exit
    assert during["ctx_switch_threads"] >= 4
    assert after["ctx_switches"] - before >= 3 * 300
    assert after["ctx_switches"] >= during["ctx_switches"]
    # The main thread's own count (what psutil gives) saw a fraction of them.
    assert sum(psutil.Process().num_ctx_switches()) - main_before < (after["ctx_switches"] - before) / 3
    usage = resource.getrusage(resource.RUSAGE_SELF)
    assert after["ctx_switches"] <= usage.ru_nvcsw + usage.ru_nivcsw  # never more than the kernel's total


def test_switches_per_operation_of_a_run_that_counted_main_threads_are_void():
    import polars as pl

    from enginebench.report.claims import switches_counted
    old = pl.DataFrame({"system": ["wt.op1", "rx.op1"], "ctx_switches": [10, 20]})
    assert switches_counted(old, ["wt.op1", "rx.op1"]).startswith("void: wt.op1's run counted")
    # A variant read beside an older base: the base's system is void, the variant's is not.
    mixed = pl.concat([old, pl.DataFrame({"system": ["wt.op1"], "ctx_switches": [900], "ctx_switch_threads": [12]})],
                      how="diagonal_relaxed")
    assert switches_counted(mixed, ["wt.op1"]) is None
    assert "rx.op1's run" in switches_counted(mixed, ["wt.op1", "rx.op1"])


def test_a_run_that_counted_main_threads_shows_no_switches_per_operation(tmp_path):
    """The per-system tables read phase_summary: a system sampled before every thread was
    counted has no cs/o there, instead of its main thread's handful."""
    import json

    import polars as pl

    from enginebench.report.rundata import load_run, phase_summary
    (tmp_path / "manifest.json").write_text(json.dumps({"params": {"systems": []}}))
    interval = {"phase": "load", "interval": 1, "t_end": 10.0, "seconds": 10.0, "ops": 1000, "requests": 1000,
                "per_op_denominator": 1000, "client_cpu_s": 0.1, "rss_bytes": 1 << 20}
    pl.DataFrame([{**interval, "system": "old", "ctx_switches": 16.0},
                  {**interval, "system": "new", "ctx_switches": 6054.0}]).write_parquet(tmp_path / "intervals.parquet")
    pl.DataFrame({"system": ["old", "new"], "t": [1.0, 1.0], "ctx_switches": [16, 6054],
                  "ctx_switch_threads": [None, 3]}).write_parquet(tmp_path / "samples.parquet")
    run = load_run(tmp_path)
    assert phase_summary(run.intervals, "old", "load")["cs_per_op"] is None
    assert phase_summary(run.intervals, "new", "load")["cs_per_op"] == 6.054
