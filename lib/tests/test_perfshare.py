"""Whose code the runner's CPU went to (metrics/perfshare.py), from perf's own output."""
import os
import signal
import time
from pathlib import Path

import pytest

from enginebench.metrics import perfshare

# Six samples of `perf script -F tid,ip,sym,dso` from RocksDB request phases of the runner
# (perf 6.1, Debian linux-perf, recorded with -g, 2026-11-28): a RocksDB leaf called by our
# adapter, libc's memcmp called by RocksDB's write-batch comparator, tcmalloc (the engines'
# allocator) with no readable caller, mimalloc (ours, compiled into the runner) freeing one of our
# update descriptions, a memcmp with no call chain, and the kernel writing RocksDB's journal (its
# write(2) through libc; that run's binary was a copy of the runner, renamed back to its path).
CHAINS = (Path(__file__).parent / "data" / "perf_script_chains.txt").read_text()
RUNNER = "/work/main/.build/native/release/enginebench-runner"


def test_rocksdb_symbols_are_the_engine_and_our_adapter_is_ours():
    assert perfshare.classify(RUNNER, "rocksdb::MemTable::Get", RUNNER) == "engine"
    assert perfshare.classify(RUNNER, "rocksdb_get_pinned", RUNNER) == "engine"
    adapter = "<enginebench_runner::engines::rocksdb::RocksSession as enginebench_runner::engines::Session>::get"
    assert perfshare.classify(RUNNER, adapter, RUNNER) == "runner"
    assert perfshare.classify("/usr/lib/x86_64-linux-gnu/libc.so.6", "__memcmp_evex_movbe", RUNNER) == "libc"
    # Its C code in the runner: the bundled xxHash (a static helper keeps its bare name) and the C API.
    for symbol in ("XXH3_hashLong_64b_default.constprop.0", "ROCKSDB_XXH3_64bits", "XXPH3_mergeAccs",
                   "XXH32_finalize", "SaveError", "CopyString.isra.0"):
        assert perfshare.classify(RUNNER, symbol, RUNNER) == "engine", symbol
    assert perfshare.classify(RUNNER, "mi_free", RUNNER) == "runner"


def test_lmdb_linked_into_the_runner_is_the_engine_and_our_adapter_is_ours():
    # Symbols of tools/build_lmdb.sh's library as the runner carries them (nm of the runner): its
    # API, its static functions and a compiler's clone of one.
    for symbol in ("mdb_put", "mdb_cursor_get", "mdb_page_search_root", "mdb_node_search", "mdb_midl_xmerge",
                   "mdb_page_get.isra.0"):
        assert perfshare.classify(RUNNER, symbol, RUNNER) == "engine", symbol
    adapter = "<enginebench_runner::engines::lmdb::LmdbSession as enginebench_runner::engines::Session>::get"
    assert perfshare.classify(RUNNER, adapter, RUNNER) == "runner"


def test_the_engines_allocator_is_the_engines_and_ours_is_ours():
    # The engines allocate from tcmalloc, the runner's Rust code from mimalloc inside the runner.
    tcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4.5.10"
    assert perfshare.classify(tcmalloc, "tcmalloc::CentralFreeList::Populate", RUNNER) == "engine"
    assert perfshare.classify(RUNNER, "_mi_page_retire", RUNNER) == "runner"


def test_each_sample_counts_for_its_leaf_and_the_c_library_and_kernel_for_their_caller():
    shares = perfshare.shares_of_script(CHAINS, RUNNER)
    assert shares["samples"] == 6
    assert (shares["engine"], shares["runner"], shares["libc"], shares["kernel"]) == (2 / 6, 1 / 6, 2 / 6, 1 / 6)
    # The memcmp RocksDB called and the journal write it made are the engine's; the memcmp
    # without a chain stays the C library's.
    assert shares["engine_with_calls"] == pytest.approx(4 / 6)
    # The harness, all in: our mimalloc sample only.
    assert shares["harness_with_calls"] == pytest.approx(1 / 6)


def test_without_call_chains_there_is_no_with_calls_figure():
    # Without -g, perf script prints each sample on one line: thread id, then its one frame.
    one_line = "\n".join(sample.splitlines()[0].rstrip() + " " + sample.splitlines()[1].strip()
                         for sample in CHAINS.strip().split("\n\n"))
    shares = perfshare.shares_of_script(one_line, RUNNER)
    assert shares["samples"] == 6 and shares["engine"] == 2 / 6
    assert "engine_with_calls" not in shares and "harness_with_calls" not in shares


def test_the_mongodb_driver_is_the_client_s_own_work_on_a_server_target():
    # Symbols as the runner binary names them (nm -C of .build/native/release/enginebench-runner).
    for symbol in ("<&mut bson::ser::raw::value_serializer::ValueSerializer as serde_core::ser::Serializer>::serialize_i64",
                   "<mongodb::action::run_command::RunCursorCommand as core::future::into_future::IntoFuture>::into_future::{{closure}}",
                   "<tokio::runtime::blocking::schedule::BlockingSchedule as tokio::runtime::task::Schedule>::schedule",
                   "core::ptr::drop_in_place<mongodb::cmap::conn::Connection>"):
        assert perfshare.classify(RUNNER, symbol, RUNNER) == "driver", symbol
    # Our code that builds the commands stays ours, whatever types it names.
    ours = "enginebench_runner::executors::server::commands::find<mongodb::sync::Client>"
    assert perfshare.classify(RUNNER, ours, RUNNER) == "runner"


def test_perconaft_in_its_shim_is_the_engine_and_the_shim_s_functions_are_ours():
    # Symbols of the tokumx-2.0.1 shim as perf names them (nm of .build/native/release/build/*/out/
    # libeb_ft_tokumx-2.0.1.so): PerconaFT's C++ and C, linked in from its static libraries, and
    # the shim's own functions, TokuMX's key comparator among them (the server's code, not the engine's).
    shim = "/work/main/.build/native/release/build/enginebench-runner-0/out/libeb_ft_tokumx-2.0.1.so"
    for symbol in ("toku_ft_insert_unique", "toku_ft_lookup", "ft_search_node", "toku::locktree::acquire_lock",
                   "db_env_create"):
        assert perfshare.classify(shim, symbol, RUNNER) == "engine", symbol
    for symbol in ("eb_ft_tokumx_compare", "eb_ft_put", "eb_ft_cursor_step"):
        assert perfshare.classify(shim, symbol, RUNNER) == "runner", symbol
    # The compressors its dictionaries use (Debian's liblzma for lzma).
    assert perfshare.classify("/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1", "lzma_code", RUNNER) == "engine"


def test_the_harness_s_functions_and_the_no_harness_ceiling_come_from_the_same_chains():
    shares = perfshare.shares_of_script(CHAINS, RUNNER)
    # One harness sample (our mimalloc free): it is the only function named, at 1/6.
    assert [share for _, share in shares["harness_top"]] == [pytest.approx(1 / 6)]
    assert shares["harness_top"][0][0] == "_mi_page_retire"
    # With the harness gone, the engine's 4 of the remaining 5 samples.
    assert shares["ceiling"] == pytest.approx(4 / 5)
    assert perfshare.headline(shares) == shares["engine_with_calls"]
    assert perfshare.headline({"engine": 0.6}) == 0.6


def test_a_recording_of_every_cpu_keeps_only_the_runners_samples():
    # perf record -a (Profiler) and `perf script -F pid,tid,...`: each sample's first line reads
    # `pid/tid`. The same six samples as the runner's (pid 4242) and again as another process's.
    def as_process(pid):
        return "\n\n".join(f" {pid}/{pid + 1}  " + sample.partition("\n")[2]
                           for sample in CHAINS.strip().split("\n\n"))
    script = as_process(4242) + "\n\n" + as_process(77)
    assert perfshare.shares_of_script(script, RUNNER, pid=4242) == perfshare.shares_of_script(CHAINS, RUNNER)
    assert perfshare.shares_of_script(script, RUNNER)["samples"] == 12
    assert "error" in perfshare.shares_of_script(as_process(77), RUNNER, pid=4242)


@pytest.mark.parametrize("sigint", [signal.SIG_IGN, signal.SIG_DFL], ids=["started-ignoring-sigint", "default"])
def test_a_phase_shorter_than_perfs_start_is_still_stopped_at_once(tmp_path, sigint):
    """stop() right after start: SIGINT waits for perf's handler. Sent before it, the signal killed
    perf with nothing written, or was lost where SIGINT was ignored when perf started (a run under
    nohup or `&`), and perf recorded on until stop's one-minute timeout."""
    ok, why = perfshare.available()
    if not ok:
        pytest.skip(why)
    before = signal.signal(signal.SIGINT, sigint)  # what the profiler's child inherits
    try:
        profiler = perfshare.Profiler(os.getpid(), tmp_path / "perf.data")
    finally:
        signal.signal(signal.SIGINT, before)
    started = time.monotonic()
    result = profiler.stop()
    assert time.monotonic() - started < 15, "stopped by its SIGINT, not by the timeout's kill"
    assert profiler.proc.returncode == -signal.SIGINT  # perf re-raises the SIGINT it caught, to exit
    assert "error" not in result or result["error"].startswith("no samples"), result
