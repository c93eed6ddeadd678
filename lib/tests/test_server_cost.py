"""What a server's own layer costs per operation (server_cost.py, measured on the stand-in
through the same client) and how far it would move an embedded run's ratios (report/server_cost.py)."""
import subprocess
import sys
import time

import psutil
import pytest

from enginebench import server_cost
from enginebench.report import server_cost as layer


@pytest.mark.parametrize("kind, own_b", [("cpu", 10.0), ("rate", 50_000.0)])
@pytest.mark.parametrize("ratio", [0.5, 2.0])
def test_a_layer_moves_a_ratio_toward_one_and_never_past_it(kind, own_b, ratio):
    assert layer.diluted(kind, ratio, own_b, 0.0) == pytest.approx(ratio)  # no layer: as measured
    moved = [layer.diluted(kind, ratio, own_b, s, cores=2) for s in (1.0, 10.0, 100.0, 1e9)]
    low, high = sorted((ratio, 1.0))
    assert all(low <= m <= high for m in moved)
    assert moved == sorted(moved, reverse=ratio > 1)  # the bigger the layer, the nearer 1
    assert moved[-1] == pytest.approx(1.0, abs=1e-3)


def test_cpu_and_rate_ratios_by_hand():
    # b spends 10 us per operation and a 20 (R 2.0): a 10-us layer makes it 30 / 20.
    assert layer.diluted("cpu", 2.0, 10.0, 10.0) == pytest.approx(1.5)
    # b at 50,000/s on one core (20 us of the host per operation), a at 100,000/s (10 us): with
    # 10 us more each, 30 / 20.
    assert layer.diluted("rate", 2.0, 50_000.0, 10.0, cores=1) == pytest.approx(1.5)


def test_the_trace_reads_a_busy_process_cpu_between_two_moments(tmp_path):
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        process = psutil.Process(busy.pid)
        deadline = time.time() + 30
        while sum(process.cpu_times()[:2]) < 0.1 and time.time() < deadline:  # it runs
            time.sleep(0.05)
        with server_cost.CpuTrace(busy.pid, tmp_path) as trace:
            time.sleep(0.5)
            t0 = time.time()
            time.sleep(1.5)
            t1 = time.time()
            time.sleep(0.5)
    finally:
        busy.kill()
        busy.wait()
    # One core spinning for 1.5 s, on a shared machine that may lend it less.
    assert 0.3 < trace.between(t0, t1) <= 1.6
    assert trace.between(t0 - 60, t1) is None  # before the first reading: not guessed
    assert 0.2 < trace.idle_rate() <= 1.05  # this process was not idle: the rate reads its spinning
