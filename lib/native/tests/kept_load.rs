//! A kept load (`phases.load.reuse`): the plan's keep_load step copies what the load left, and a
//! later plan that starts from that copy (restored) finds every document and index entry the
//! load wrote, on every embedded engine, without running the workload's setup again.
mod common;

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use common::{TempDir, EMBEDDED};
use enginebench_runner::error::Result;
use enginebench_runner::plan::{self, Plan, Reopen, Step};
use enginebench_runner::run::open_store;
use enginebench_runner::executors::Target;
use enginebench_runner::workloads::linkbench::LinkBench;
use enginebench_runner::workloads::Workload;

/// Runs `steps` on the store in `dir`, reopening as the runner's embedded target does.
fn execute(engine: &str, dir: &Path, opts: &Map<String, Value>, steps: Vec<Step>, workload: &mut LinkBench) -> Arc<dyn Target> {
    let reopen = |current: &Arc<dyn Target>, action: &Reopen| -> Result<(Value, Arc<dyn Target>)> {
        current.close()?;
        let done = match action {
            Reopen::CopyTo(to) => plan::copy_dir(dir, to)?,
            Reopen::Evict(method) => plan::evict(dir, method)?,
        };
        Ok((done, open_store(engine, dir, opts)? as Arc<dyn Target>))
    };
    let mut target: Arc<dyn Target> = open_store(engine, dir, opts).unwrap();
    let plan = Plan { steps, max_errors: 0, reopen: &reopen };
    let (status, error) = plan::execute(&plan, workload, &mut target).unwrap();
    assert_eq!((status.as_str(), error.map(|e| e.message)), ("complete", None));
    target
}

#[test]
fn a_kept_load_restores_everything_the_load_wrote() {
    for (label, engine, text) in EMBEDDED {
        let opts = common::full_options(engine, text);
        let (loaded, kept, restored) = (TempDir::new(label), TempDir::new("kept"), TempDir::new("restored"));
        let keep_dir = kept.0.join("load");
        let params = json!({"maxid1": 501, "max_degree": 50});

        let mut first = LinkBench::new(&params).unwrap();
        let steps = vec![Step::Load { threads: 1, interval_s: 0.5 }, Step::Verify,
                         Step::KeepLoad { dir: keep_dir.display().to_string(), origin: json!({"run": "r1"}) }];
        let target = execute(engine, &loaded.0, &opts, steps, &mut first);
        let (expected, found) = first.verify(target.clone().session().unwrap().as_mut()).unwrap();
        assert_eq!(expected, found, "{label}: the store reopened after the copy");
        target.close().unwrap();
        let origin: Value = serde_json::from_str(&std::fs::read_to_string(format!("{}.json", keep_dir.display())).unwrap()).unwrap();
        assert_eq!(origin["run"], "r1");
        assert!(!keep_dir.with_extension("partial").exists());

        // The driver copies the kept load into the new system's folder; the plan starts there.
        plan::copy_dir(&keep_dir, &restored.0.join("data")).unwrap();
        let mut second = LinkBench::new(&params).unwrap();
        let target = execute(engine, &restored.0.join("data"), &opts, vec![Step::Restored { from: origin }], &mut second);
        let (expected, found) = second.verify(target.clone().session().unwrap().as_mut()).unwrap();
        assert_eq!(expected, found, "{label}: the restored copy holds the whole load");
        assert!(found["link"].as_u64().unwrap() > 500, "{label}: {found}");
        target.close().unwrap();
    }
}
