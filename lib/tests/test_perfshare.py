"""Whose code the runner's CPU went to (metrics/perfshare.py), from perf's own output."""
from pathlib import Path

import pytest

from enginebench.metrics import perfshare

# Four samples of `perf script -F ip,sym,dso` taken from a RocksDB request phase of the runner
# (perf 6.x, Debian linux-perf): a RocksDB leaf, libc's memcmp called by RocksDB's comparator,
# the allocator called by our RocksDB adapter, and a memcmp with no call chain.
CHAINS = (Path(__file__).parent / "data" / "perf_script_chains.txt").read_text()
RUNNER = "/tmp/nb2/release/enginebench-runner"


def test_rocksdb_symbols_are_the_engine_and_our_adapter_is_ours():
    assert perfshare.classify(RUNNER, "rocksdb::MemTable::Get", RUNNER) == "engine"
    assert perfshare.classify(RUNNER, "rocksdb_get_pinned", RUNNER) == "engine"
    adapter = "<enginebench_runner::engines::rocksdb::RocksSession as enginebench_runner::engines::Session>::get"
    assert perfshare.classify(RUNNER, adapter, RUNNER) == "runner"
    assert perfshare.classify("/usr/lib/x86_64-linux-gnu/libc.so.6", "__memcmp_evex_movbe", RUNNER) == "libc"


def test_the_c_library_is_charged_to_its_first_caller_outside_it():
    # The RocksDB leaf and the memcmp RocksDB called are the engine's; the allocation our adapter
    # made is the runner's; the memcmp without a chain stays the C library's.
    assert perfshare.engine_share_of_chains(CHAINS, RUNNER) == pytest.approx(2 / 4)


def test_without_call_chains_there_is_no_figure():
    leaves_only = "\n\n".join(block.strip().splitlines()[0] for block in CHAINS.strip().split("\n\n"))
    assert perfshare.engine_share_of_chains(leaves_only, RUNNER) is None
