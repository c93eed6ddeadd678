"""SYSTEMS=: a run of some of an experiment's systems says which did not run, refuses an unknown
label before anything starts, and never stands in for a run of every system in the index."""
import json
import subprocess
import sys

import pytest

from enginebench.driver import select_systems
from enginebench.params import load_params
from enginebench.report.runs import newest_complete


def test_a_selection_keeps_the_params_order_and_names_the_rest():
    params = load_params("linkbench_cached", "smoke")
    selection = select_systems(params, ["lmdb.op1", "wt.op1"])
    assert [s["label"] for s in params["systems"]] == ["wt.op1", "lmdb.op1"]
    assert selection == {"ran": ["wt.op1", "lmdb.op1"], "not_run": ["rx.op1", "wtlsm.op1", "wt307.op1"], "added": []}


def test_flashbacks_recorder_runs_in_every_selection(tmp_path):
    """Its other systems replay what the first one records in the same run: left out, the first
    selected would record instead, live, and a claim on replays would read another system."""
    params = load_params("flashback_replay", "smoke")
    selection = select_systems(params, ["rx", "lmdb"])
    assert selection == {"ran": ["wt", "rx", "lmdb"], "not_run": ["wtlsm"], "added": ["wt"]}
    assert [s["label"] for s in params["systems"]] == ["wt", "rx", "lmdb"]
    # With a capture file every system replays it: nothing is added.
    (tmp_path / "capture.ops.jsonl").write_text("")
    replayed = load_params("flashback_replay", "smoke", [f"workload.capture_file={tmp_path / 'capture.ops.jsonl'}"])
    assert select_systems(replayed, ["rx"]) == {"ran": ["rx"], "not_run": ["wt", "lmdb", "wtlsm"], "added": []}


def test_selecting_every_system_or_none_is_no_selection():
    params = load_params("linkbench_cached", "smoke")
    assert select_systems(params, None) is None
    assert select_systems(params, ["rx.op1", "wt.op1", "wtlsm.op1", "lmdb.op1", "wt307.op1"]) is None
    assert len(params["systems"]) == 5


def test_an_unknown_label_names_the_file_and_the_labels_it_has():
    with pytest.raises(ValueError, match=r"linkbench_cached.yaml: SYSTEMS=wt.op1,wt: no system labelled wt at "
                                         r"scale smoke; allowed: wt.op1, rx.op1, wtlsm.op1, lmdb.op1, wt307.op1"):
        select_systems(load_params("linkbench_cached", "smoke"), ["wt.op1", "wt"])


def test_the_command_line_refuses_it_before_anything_starts(isolated_run):
    done = subprocess.run([sys.executable, "-m", "enginebench", "experiment", "iibench_500m", "--scale", "smoke",
                           "--systems", "nope"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no system labelled nope" in done.stderr and "allowed: rx, wt" in done.stderr
    assert not (isolated_run / "results").exists()


def _run(base, name, status, not_run=(), sets=()):
    folder = base / name
    folder.mkdir(parents=True)
    manifest = {"status": status, "params": {"sets": list(sets)},
                **({"selection": {"ran": ["wt"], "not_run": list(not_run)}} if not_run else {})}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_the_index_prefers_a_run_of_every_system(tmp_path):
    whole = _run(tmp_path, "20261101-000000-vm", "complete")
    newer_part = _run(tmp_path, "20261102-000000-vm", "complete", not_run=["rx"])
    _run(tmp_path, "20261103-000000-vm", "failed")
    _run(tmp_path, "20261104-000000-vm", "complete", sets=["settings=today"])
    assert newest_complete(sorted(tmp_path.iterdir())) == whole
    assert newest_complete([newer_part]) == newer_part


def test_the_collection_reads_no_variant_and_each_claim_from_a_selection_that_judged_it(tmp_path):
    """With no run of every system, the collection's claims come from runs of a selection under the
    experiment's own params (an explain's bases), each claim from the newest that judged it; a run
    with keys set by hand (an explain's variant) measured something else and is never read."""
    from enginebench.report import collection
    from enginebench.report.runs import runs_of_the_params

    def run(name, claims, **kinds):
        folder = _run(tmp_path, name, "complete", **kinds)
        (folder / "summary.json").write_text(json.dumps({"claims": claims}))
        return folder
    judged = lambda cid, ratio: {"id": cid, "verdict": "holds", "measured_ratio": ratio}  # noqa: E731
    unjudged = lambda cid: {"id": cid, "verdict": "not evaluated", "measured_ratio": None}  # noqa: E731
    fractal_base = run("20261205-032352-vm", [judged("sb.tokumxse", 1.51), unjudged("sb.lsm_vs_btree")],
                       not_run=["wt60"])
    lsm_base = run("20261205-033804-vm", [unjudged("sb.tokumxse"), judged("sb.lsm_vs_btree", 0.90)],
                   not_run=["tokumx"])
    variant = run("20261205-042504-vm", [unjudged("sb.tokumxse"), judged("sb.lsm_vs_btree", 0.99)],
                  not_run=["tokumx"], sets=["systems[rx].options.soft_rate_limit=0"])
    candidates = runs_of_the_params(sorted(tmp_path.iterdir()))
    assert candidates == [lsm_base, fractal_base] and variant not in candidates
    assert collection._claim_verdict(candidates, "sb.tokumxse") == (fractal_base, judged("sb.tokumxse", 1.51))
    assert collection._claim_verdict(candidates, "sb.lsm_vs_btree") == (lsm_base, judged("sb.lsm_vs_btree", 0.90))
    # Only variants: no reading at all, rather than one under changed settings.
    assert runs_of_the_params([variant]) == []
    # A run of every system is the one reading, whatever it judged.
    whole = run("20261101-000000-vm", [unjudged("sb.tokumxse")])
    assert runs_of_the_params(sorted(tmp_path.iterdir())) == [whole]
