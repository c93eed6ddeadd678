//! enginebench-runner: the native runner of the embedded target. One binary whose flags are
//! its whole config:
//!
//!   enginebench-runner run SPEC.json     run one system's phase plan, one JSON event per line
//!   enginebench-runner serve ...         a target's Store calls served over stdin/stdout (the tests' contract)
//!   enginebench-runner describe ...      what a workload's load leaves, and its documents' sizes
//!   enginebench-runner engines           the engines and releases built in, and the workloads
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use enginebench_runner::{run, sample, serve};

/// Rust's allocations go to mimalloc, compiled into this binary; the engines' C and C++ code
/// allocates from tcmalloc (build.rs). Two allocators keep the engines' allocation work apart
/// from ours in a profile: no memory crosses between them (the engines' buffers are freed by the
/// engines' own calls: rocksdb_free, WiredTiger's cursors, LMDB's pages).
#[global_allocator]
static OURS: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "enginebench-runner", version, about = "enginebench's native runner: the engines and the workloads' per-operation loops")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one system: open its engine, execute the spec's phase plan, report events on stdout.
    Run {
        /// The spec the driver wrote (system, data folder, workload, plan).
        spec: PathBuf,
    },
    /// Serve Store calls as JSON lines on stdin/stdout (one engine, any number of sessions).
    Serve {
        /// wiredtiger, rocksdb or lmdb
        #[arg(long, default_value = "")]
        engine: String,
        /// The database folder (created if missing).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The system's options as a JSON object (engine options plus oplog, oplog_size_mb, mmap_lock).
        #[arg(long, default_value = "{}")]
        options: String,
        /// Serve a server instead of an engine: its spec as JSON (uri, database, executor, companion, ...).
        #[arg(long)]
        server: Option<String>,
    },
    /// What a workload's load leaves, per collection, and its documents' mean BSON size (from a
    /// sample of its loaders' first documents), as JSON: the driver sizes a run with it.
    Describe {
        /// The workload's params as a JSON object, with its name: {"name": "linkbench", ...}.
        #[arg(long)]
        workload: String,
        /// The load's threads (some workloads' totals depend on them).
        #[arg(long, default_value_t = 1)]
        load_threads: usize,
    },
    /// The engines and releases this runner was built with, as JSON.
    Engines,
}

/// A panicking worker ends the runner at once, as an abort-on-panic build would: its message is
/// printed, then the process aborts, and the driver reports the signal. Unwinding would end only
/// that thread and leave the phase waiting on it.
fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
}

fn main() {
    abort_on_panic();
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Run { spec } => run::main(&spec),
        Command::Serve { engine, dir, options, server } => serve::main(&engine, &dir, &options, server.as_deref()),
        Command::Describe { workload, load_threads } => sample::main(&workload, load_threads),
        Command::Engines => {
            println!("{}", run::engines_json());
            0
        }
    };
    std::process::exit(code);
}
