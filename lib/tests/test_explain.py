"""`make explain`: the claim's systems once per named factor, each variant one --set away from
the base, and a page that names the factors that move the ratio (explain.py)."""
import html
import json
from pathlib import Path

import polars as pl
import pytest

from enginebench import explain
from enginebench.params import load_params
from enginebench.report.rundata import RunData


def test_each_variant_differs_from_the_base_in_one_named_factor():
    claim, systems, variants = explain.plan("linkbench_cached", "lb.query.cached.btree_vs_lsm", "default")
    assert [s["label"] for s in systems] == ["wt.op1", "rx.op1"]  # the query phase's systems, with the oplog
    by_factor = {v.factor: v.sets for v in variants}
    assert list(by_factor) == ["base", "settings", "release", "insert grouping", "checkpoint interval",
                               "checkpoints in measured time", "journal compressor", "rocksdb scans", "write throttle", "tombstone compactions",
                               "query yields", "reads before writes",
                               "threads", "cache size"]
    assert by_factor["base"] == [] and {v.scope for v in variants} == {()}  # runs its query phase
    # The post's own settings (syncPeriodSecs 600, journalCompressor none) are the base's.
    # The interval the settings give (600 s, scaled to 50 s by the measured phase) against 60 s
    # (scaled alike, to 5 s).
    assert by_factor["checkpoint interval"] == ["systems[wt.op1].options.checkpoint_s=60"]
    assert by_factor["checkpoints in measured time"] == ["phases.measure.stands_for_s=null",
                                                         "phases.quiesce_checkpoint=true"]
    scaled = {s["label"]: s["options"].get("checkpoint_s") for s in load_params(
        "linkbench_cached", "default", by_factor["checkpoint interval"])["systems"]}
    assert scaled["wt.op1"] == 5 and scaled["wt.op0"] == 50
    assert by_factor["journal compressor"] == ["systems[wt.op1].options.journal_compressor=snappy"]
    # The post's own tree (its 2015 release) against today's 11.3.1, under the same settings.
    assert by_factor["release"] == ["systems[wt.op1].options.version=11.3.1"]
    # MongoRocks' scans against scans bounded at their range; the reads mongod 3.2 made before a write.
    assert by_factor["rocksdb scans"] == ["systems[rx.op1].options.scans=bounded"]
    assert by_factor["tombstone compactions"] == ["systems[rx.op1].options.tombstone_compaction_skips=0"]
    assert by_factor["write throttle"] == ["systems[rx.op1].options.soft_rate_limit=0"]
    assert by_factor["query yields"] == ["systems[wt.op1].options.yield_iterations=0",
                                         "systems[rx.op1].options.yield_iterations=0"]
    assert by_factor["reads before writes"] == ["systems[wt.op1].options.read_before_write=false",
                                                "systems[rx.op1].options.read_before_write=false"]
    # A variant runs only the systems its factor changes; the others are read from the base's run.
    changes = {v.factor: v.changes for v in variants}
    assert changes["release"] == changes["checkpoint interval"] == changes["journal compressor"] == ["wt.op1"]
    assert changes["settings"] == changes["threads"] == changes["base"] == ["wt.op1", "rx.op1"]
    assert changes["checkpoints in measured time"] == ["wt.op1", "rx.op1"]  # the quiesce flushed RocksDB too
    assert by_factor["threads"] == [f"phases.measure.threads={2 * load_params('linkbench_cached', 'default')['phases']['measure']['threads']}"]
    # Every variant loads afresh: RocksDB measured from a kept load's copy ran about 20% slower.
    assert not any("phases.load.reuse=true" in sets for sets in by_factor.values())
    # LinkBench's requests insert one document each: the grouping changes only the load.
    grouping = next(v for v in variants if v.factor == "insert grouping")
    assert grouping.sets == [] and "insert one document each" in grouping.not_run
    # Every variant's sets are valid params: loading them raises nothing.
    for sets in by_factor.values():
        load_params("linkbench_cached", "default", sets)


def test_a_release_claim_is_not_explained_by_swapping_its_releases():
    _, systems, variants = explain.plan("linkbench_cached", "lb.release.load", "default")
    assert {s["label"] for s in systems} == {"wt.op1", "wt307.op1"}
    assert "release" not in [v.factor for v in variants]
    threads = next(v.sets for v in variants if v.factor == "threads")
    # On a load claim the threads are the load's, and the load is what is measured: no kept load.
    assert "phases.load.threads=4" in threads and "phases.load.reuse=true" not in threads
    assert next(v for v in variants if v.factor == "insert grouping").sets  # the load groups its inserts
    # A load claim's systems stop at the end of their load (wt307.op1 never measures requests):
    # nothing after the load changes what it measured.
    assert {v.scope for v in variants} == {("systems[wt.op1].measure_requests=false",)}
    run_sets = next(v for v in variants if v.factor == "journal compressor").run_sets
    assert run_sets[-1] == "systems[wt.op1].measure_requests=false"
    assert not load_params("linkbench_cached", "default", run_sets)["systems"][0]["measure_requests"]


def test_an_unknown_claim_names_the_experiments_claims():
    with pytest.raises(ValueError, match=r"CLAIM=lb.nope: not a claim of linkbench_cached .*allowed: lb.load.btree_vs_lsm"):
        explain.plan("linkbench_cached", "lb.nope", "default")
    ran = []
    with pytest.raises(ValueError, match=r"CLAIM=lb.nope: not a claim"):  # of several, before any runs
        explain.explain_claims("linkbench_cached", ["lb.load.btree_vs_lsm", "lb.nope"],
                               runner=lambda exp, changes, sets: ran.append(changes))
    assert ran == []


def test_a_claim_on_one_system_is_planned_on_its_system():
    # fb.writes_fast bounds RocksDB's write latency: it has no denominator role.
    claim, systems, variants = explain.plan("flashback_replay", "fb.writes_fast", "default")
    assert claim["denominator_role"] == ""
    assert "rx" in [s["label"] for s in systems]
    assert variants[0].factor == "base" and any(v.factor == "write throttle" for v in variants)


def test_the_conclusion_names_a_factor_that_turns_the_verdict():
    claim = {"reference_ratio": "1.24", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "does not hold", "ratio": 0.84},
            {"factor": "settings", "verdict": "holds", "ratio": 1.2},
            {"factor": "threads", "verdict": "does not hold", "ratio": 0.86}]
    assert explain.conclusion(claim, rows) == ("Factors that move the ratio: settings (the verdict turns from "
                                               "does not hold to holds).")
    unexplained = explain.conclusion(claim, rows[::2])
    assert unexplained.startswith("Unexplained by these factors")
    # A claim that holds at its size: a factor that takes the ratio out of it is named too.
    held = [{"factor": "base", "verdict": "holds", "ratio": 1.30}, {"factor": "settings", "verdict": "holds", "ratio": 1.70}]
    assert explain.conclusion(claim, held) == ("Factors that move the ratio: settings (the ratio leaves the published "
                                               "size: 1.70 against 1.30).")


def test_a_smoke_explain_runs_the_variants_and_writes_its_page(isolated_run, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    # Two factors keep it short: the base and the journal compressor run at the smoke scale.
    monkeypatch.setattr(explain, "FACTORS", tuple(f for f in explain.FACTORS if f.name == "journal compressor"))
    monkeypatch.setattr(explain, "_threads_of", lambda phase: lambda params, systems: None)
    # ...and the claim's two engines only (the smoke scale also has WiredTiger LSM in the lsm role).
    both = explain.claim_systems
    monkeypatch.setattr(explain, "claim_systems",
                        lambda params, claim: [s for s in both(params, claim) if s["label"] in ("wt.op1", "rx.op1")])
    # Two claims on the same systems and phase: each run is made once and serves both.
    page, other = explain.explain_claims("linkbench_cached", ["lb.load.btree_vs_lsm", "lb.load.cpu.lsm_vs_btree"],
                                         scale="smoke")
    text = page.read_text()
    assert page.name == "explain-linkbench_cached-lb.load.btree_vs_lsm.html"
    assert other.name == "explain-linkbench_cached-lb.load.cpu.lsm_vs_btree.html"
    assert explain.read_answer("linkbench_cached", "lb.load.cpu.lsm_vs_btree")["base"]["run"] == \
        explain.read_answer("linkbench_cached", "lb.load.btree_vs_lsm")["base"]["run"]
    assert "journal compressor" in text and "systems[wt.op1].options.journal_compressor=snappy" in text
    assert ("Factors that move the ratio" in text) or ("Unexplained by these factors" in text)
    runs = sorted((isolated_run / "results" / "linkbench_cached").iterdir())
    assert len(runs) == 2  # the base and one variant, each its own results folder, for both claims
    # Load claims: every run, the base's included, ends with its systems' load.
    phases = {json.loads(line).get("phase") for run in runs for events in run.glob("*/events.jsonl")
              for line in events.read_text().splitlines() if line.strip()}
    assert "load" in phases and "run" not in phases
    assert "stops at the end of its systems' load" in text and explain.read_answer("linkbench_cached", "lb.load.cpu.lsm_vs_btree")["to_end_of_load"]
    notes = explain.explain_note("linkbench_cached", pl.DataFrame([
        {"id": "lb.load.btree_vs_lsm", "verdict": "does not hold", "published_ratio": 2.0, "measured_ratio": 0.9}]))
    assert "make explain EXP=linkbench_cached CLAIM=lb.load.btree_vs_lsm" in notes and "its page" in notes
    # The answer as data, beside the page, for the collection page and claims.json.
    answer = explain.read_answer("linkbench_cached", "lb.load.btree_vs_lsm")
    assert answer["page"] == page.name and answer["scale"] == "smoke" and html.escape(answer["answer"]) in text
    assert answer["tried"] in (["journal compressor"], []) and answer["base"]["run"]


def test_an_unexplained_verdict_names_the_factors_tried_and_the_nearest_one():
    claim = {"reference_ratio": "1.16", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "holds", "ratio": 46.9},
            {"factor": "settings", "verdict": "holds", "ratio": 47.5},
            {"factor": "storage", "verdict": "holds", "ratio": 2.9},
            {"factor": "cache size", "verdict": "not run", "ratio": None}]
    text = explain.conclusion(claim, rows)
    assert "(tried: settings, storage)" in text
    assert text.endswith("The one that moves it furthest toward the post's 1.16: storage (46.90 to 2.90).")
    assert explain.moved_factors(claim, rows) == []


def test_a_bound_has_no_published_size_to_match():
    """fb.writes_fast: every replayed write under 10 ms. 1.6 ms meets the bound; it is not a
    sixth of the post's size, and a variant at 5 ms does not come "within" it."""
    claim = {"reference_ratio": "10", "expect": "less than (ms)"}
    rows = [{"factor": "base", "verdict": "holds", "ratio": 1.64},
            {"factor": "query yields", "verdict": "holds", "ratio": 5.10}]
    assert explain.conclusion(claim, rows) == ("Agrees with the post: the base holds, and no factor tried turns the "
                                               "verdict (tried: query yields).")
    assert not explain.differs({"verdict": "holds", "published_ratio": 10.0, "measured_ratio": 1.64,
                                "expect": "less than (ms)"})
    turned = rows + [{"factor": "settings", "verdict": "does not hold", "ratio": 23.0}]
    assert explain.moved_factors(claim, turned) == ["settings"]
    from enginebench.report.claims import size_column
    assert size_column("holds", 10.0, 1.64, "less than (ms)") == "no published size"


def test_a_claim_that_already_reads_as_the_post_is_said_to_agree():
    claim = {"reference_ratio": "4.67", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "holds", "ratio": 5.73},
            {"factor": "rocksdb scans", "verdict": "holds", "ratio": 6.44},
            {"factor": "write throttle", "verdict": "holds", "ratio": 3.46}]
    text = explain.conclusion(claim, rows)
    assert text.startswith("Agrees with the post: the base holds within the published size (5.73 against 4.67)")
    assert "(tried: rocksdb scans, write throttle)" in text and explain.moved_factors(claim, rows) == []


def _manifest(results, run_id: str, params: dict, status: str = "complete", started: str = "2026-12-04T12:00:00+00:00",
              system_status: dict | None = None, **extra) -> None:
    """A run's manifest as the driver writes it: its params, each system's status, when it started."""
    (results / run_id).mkdir(parents=True)
    systems = {s["label"]: {"status": (system_status or {}).get(s["label"], "complete")} for s in params["systems"]}
    (results / run_id / "manifest.json").write_text(json.dumps(
        {"status": status, "scale": "smoke", "params": params, "systems": systems, "started_at": started,
         "target": {"kind": "embedded"}, **extra}, default=str))


NOON = 1796385600.0  # 2026-12-04T12:00:00Z, when the runs above "started"


def test_the_base_is_a_run_of_this_sitting_with_the_same_params(isolated_run):
    from enginebench.explain_runs import existing_run
    params = load_params("linkbench_cached", "smoke")
    results = isolated_run / "results" / "linkbench_cached"
    older = json.loads(json.dumps(params, default=str))
    older["phases"]["load"].pop("reuse")  # a run made before kept loads existed
    older["params_file"] = "/elsewhere/params/linkbench_cached.yaml"  # made from another checkout
    _manifest(results, "20261204-120000-vm", older)
    _manifest(results, "20261204-120100-vm", params, status="failed")
    _manifest(results, "20261204-120200-vm", params, repeat={"group": "g", "index": 1, "of": 3})
    _manifest(results, "20261204-120300-vm", load_params("linkbench_cached", "smoke", ["workload.maxid1=3001"]))
    _manifest(results, "20261204-120400-vm", params, system_status={"rx.op1": "aborted"})
    found = existing_run("linkbench_cached", "smoke", ["wt.op1", "rx.op1"], now=NOON + 600)
    assert found == results / "20261204-120000-vm"  # complete, alone, same params, both systems complete
    # The aborted system's run still serves the other one.
    assert existing_run("linkbench_cached", "smoke", ["wt.op1"], now=NOON + 600) == results / "20261204-120400-vm"
    # Not in this sitting: the host's speed has moved since.
    assert existing_run("linkbench_cached", "smoke", ["wt.op1", "rx.op1"], now=NOON + 4 * 3600) is None
    assert existing_run("linkbench_cached", "smoke", ["wt.op1", "rx.op1"], now=NOON + 4 * 3600, within_s=None) == found


def test_a_variant_reads_a_run_of_more_systems_under_the_same_settings(isolated_run):
    """fb.writes_fast (rx, wtlsm) reads the runs fb.query_avg's explain made of rx, lmdb and wtlsm:
    sets that shaped only lmdb do not matter; a set outside the systems does."""
    from enginebench.explain_runs import existing_run
    results = isolated_run / "results" / "flashback_replay"
    grouped = [f"systems[{label}].options.insert_group=64" for label in ("rx", "lmdb", "wtlsm")]
    three = load_params("flashback_replay", "smoke", grouped)
    three["systems"] = [s for s in three["systems"] if s["label"] != "wt"]  # the run's selection
    _manifest(results, "20261204-120000-vm", three)
    _manifest(results, "20261204-120500-vm", load_params("flashback_replay", "smoke", ["phases.measure.threads=20"]))
    wanted = ["systems[rx].options.insert_group=64", "systems[wtlsm].options.insert_group=64"]
    assert existing_run("flashback_replay", "smoke", ["rx", "wtlsm"], wanted, now=NOON + 600) == results / "20261204-120000-vm"
    # One system under another setting (rx still groups by 1 here) is not served.
    assert existing_run("flashback_replay", "smoke", ["rx", "wtlsm"], wanted[1:], now=NOON + 600) is None
    # Another client count is a set outside the systems: it serves only that variant.
    assert existing_run("flashback_replay", "smoke", ["rx", "wtlsm"], now=NOON + 600) is None


def test_a_claim_planned_after_one_on_more_systems_plans_no_run_of_its_own(isolated_run):
    from enginebench import explain_differing as ed
    both = ed.planned_runs("flashback_replay", ["fb.query_avg", "fb.writes_fast"], "smoke")
    alone = ed.planned_runs("flashback_replay", ["fb.query_avg"], "smoke")
    assert both == alone and len(alone) == 10
    assert len(ed.planned_runs("flashback_replay", ["fb.writes_fast"], "smoke")) == 10


def test_side_by_side_takes_the_base_for_every_system_the_variant_did_not_change(tmp_path):
    from enginebench.report.rundata import RunData

    def run(folder: str, label_rates: dict, sets: list[str], start: int = 100_000) -> RunData:
        systems = [{"label": label} for label in label_rates]
        # The probe read 100,000 docs/s before every system and at the end.
        speed = {"start": {"docs_per_s": start}, "end": {"docs_per_s": 100_000},
                 "before": {label: {"docs_per_s": 100_000} for label in label_rates}}
        manifest = {"params": {"systems": systems, "sets": sets}, "systems": {label: {"status": "complete"} for label in label_rates},
                    "host": {"speed": speed}, "order": {"kind": "listed", "systems": list(label_rates)}}
        intervals = pl.DataFrame({"system": list(label_rates), "rate": list(label_rates.values())})
        return RunData(tmp_path / folder, manifest, intervals, pl.DataFrame(), pl.DataFrame())
    base = run("base", {"rx": 1.0, "lmdb": 2.0, "wtlsm": 3.0}, [])
    # A run another explain made: it changed rx and lmdb, the claim's variant changes rx only.
    # Its start probe was an outlier: the whole run "drifted", while each system ran at one speed.
    variant = run("variant", {"rx": 10.0, "lmdb": 20.0, "wtlsm": 30.0}, ["systems[rx].x=1", "systems[lmdb].x=1"],
                  start=50_000)
    both = explain.side_by_side(variant, base, ["rx"])
    assert dict(both.intervals.sort("system").iter_rows()) == {"lmdb": 2.0, "rx": 10.0, "wtlsm": 3.0}
    # Each system's own files (its events, Flashback's replay summary) are those of its run.
    assert both.system_dir("rx") == tmp_path / "variant" / "rx" and both.system_dir("lmdb") == tmp_path / "base" / "lmdb"
    # The host's speed while each ran, from its own run's probes: rx (the variant's) against lmdb (the base's).
    from enginebench.report.trust import claim_drift, host_drift_reason
    assert claim_drift(both, "rx,lmdb") == 1.0 and claim_drift(both, "rx") == 1.0
    assert host_drift_reason(both, "rx,lmdb") is None and "at the end what it read at the start" in host_drift_reason(both)
    # In the base's order, so a claim that reads the first system of a role reads the same one.
    assert [s["label"] for s in both.manifest["params"]["systems"]] == ["rx", "lmdb", "wtlsm"]
    only_wtlsm = explain.side_by_side(run("other", {"wtlsm": 30.0}, ["systems[wtlsm].x=1"]), base, ["wtlsm"])
    assert [s["label"] for s in only_wtlsm.manifest["params"]["systems"]] == ["rx", "lmdb", "wtlsm"]


def test_flashbacks_recorder_runs_in_every_variant():
    """The claim's systems replay what the first system records in the same run: without it the
    first selected system would record, live, and the claim would read another system."""
    _claim, systems, variants = explain.plan("flashback_replay", "fb.writes_fast", "smoke")
    assert [s["label"] for s in systems] == ["rx"]
    assert all(v.changes[0] == "wt" for v in variants if not v.not_run)
    assert next(v for v in variants if v.factor == "write throttle").changes == ["wt", "rx"]


def test_a_flashback_claim_is_explained_on_the_systems_its_check_reads():
    """rx and wtlsm both play lsm, and "On RocksDB..." reads rx (report._pick: the first replayer
    of a role). A factor on WiredTiger alone (its release, checkpoints, journal) would run the
    recorder and wtlsm and read the base's rx again: the variant repeats the base, so it is not
    planned."""
    _claim, systems, variants = explain.plan("flashback_replay", "fb.query_avg", "smoke")
    assert [s["label"] for s in systems] == ["rx", "lmdb"]
    factors = {v.factor for v in variants}
    assert not factors & {"release", "checkpoint interval", "journal compressor"}
    assert all("wtlsm" not in v.changes for v in variants)


def test_a_fractal_claim_compares_its_release_and_the_emulated_disk_is_a_factor():
    """tk.insert.fractal_vs_mmap: the fractal tree at TokuMX 1.0.4's release (not filtered out as a
    WiredTiger release would be) against LMDB; the params' slow disk is a factor of its own."""
    _, systems, variants = explain.plan("tokumx_insert_10m", "tk.insert.fractal_vs_mmap", "default")
    assert [s["label"] for s in systems] == ["lmdb", "tokumx"]
    by_factor = {v.factor: v for v in variants}
    assert by_factor["storage"].sets == ["resources.storage.profile=none"]
    assert by_factor["storage"].changes == ["lmdb", "tokumx"]
    assert "release" not in by_factor and "checkpoint interval" not in by_factor  # WiredTiger's only
    assert by_factor["cache size"].changes == ["tokumx"]  # LMDB has no cache of its own


def test_a_client_sweep_doubles_each_client_count():
    _, _, variants = explain.plan("tokumx_read", "tk.read_only", "default")
    threads = next(v for v in variants if v.factor == "threads")
    assert threads.sets[0] == "phases.measure.threads=[2, 4, 6, 8, 10, 12]"
    assert load_params("tokumx_read", "default", threads.sets)["phases"]["measure"]["threads"] == [2, 4, 6, 8, 10, 12]


def test_the_collection_page_gives_each_differing_verdict_its_explain_answer(monkeypatch, tmp_path):
    from enginebench.report.collection import why_it_differs
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path))
    claim = {"id": "tk.read_only", "claim": "reads", "reference_ratio": "1.05", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "holds", "ratio": 3.53, "run": "/r/base"},
            {"factor": "threads", "verdict": "holds", "ratio": 1.04, "run": "/r/threads", "set": "x"}]
    differing = {"verdict": "holds", "published_ratio": 1.05, "measured_ratio": 3.53}
    assert why_it_differs("tokumx_read", "tk.read_only", differing, "default")["why_it_differs"] == (
        "not explained yet: make explain EXP=tokumx_read CLAIM=tk.read_only")
    explain.write_answer("tokumx_read", claim, rows, "default", 1)
    why = why_it_differs("tokumx_read", "tk.read_only", differing, "default")
    assert why == {"why_it_differs": "Factors that move the ratio: threads (the ratio comes within the published size).",
                   "explain_page": "explain-tokumx_read-tk.read_only.html"}
    assert "explained at the default scale, where the base read holds at 3.53" in why_it_differs(
        "tokumx_read", "tk.read_only", differing, "paper")["why_it_differs"]
    agreeing = {"verdict": "holds", "published_ratio": 1.05, "measured_ratio": 1.06}
    assert why_it_differs("tokumx_read", "tk.read_only", agreeing, "default")["why_it_differs"] == ""


def test_tokumx_inserts_one_document_per_call_so_grouping_is_not_run():
    for exp, claim in (("tokumx_insert_10m", "tk.insert.fractal_vs_mmap"), ("tokumx_read", "tk.read_only")):
        _, _, variants = explain.plan(exp, claim, "default")
        grouping = next(v for v in variants if v.factor == "insert grouping")
        assert grouping.sets == [] and "one document" in grouping.not_run


def test_factors_can_be_named_and_a_misspelt_one_is_refused():
    _, _, variants = explain.plan("linkbench_cached", "lb.query.cached.btree_vs_lsm", "default",
                                  ["rocksdb scans", "checkpoints in measured time"])
    assert [v.factor for v in variants] == ["base", "checkpoints in measured time", "rocksdb scans"]
    with pytest.raises(ValueError, match=r"FACTORS: 'rocksdb scan' not a factor; allowed: settings, release, .*cache size"):
        explain.plan("linkbench_cached", "lb.query.cached.btree_vs_lsm", "default", ["rocksdb scan"])


def test_explain_differing_takes_the_unanswered_differing_claims_and_plans_their_runs(monkeypatch, tmp_path, capsys):
    """`make explain-differing`: the claims the collection page lists as "not explained yet" at
    the scale, grouped by experiment; PLAN=1 prints the distinct runs and their time from this
    host's newest complete run, system by system, and runs nothing."""
    from enginebench import explain_differing as ed
    from enginebench.report import collection
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(tmp_path / "results"))
    (tmp_path / "reports").mkdir()

    def row(exp, claim_id, scale, verdict, published, measured, target="embedded"):
        return {"experiment": exp, "claim_id": claim_id, "scale": scale, "target": target, "verdict": verdict,
                "published_ratio": published, "measured_ratio": measured}
    monkeypatch.setattr(collection, "claim_rows", lambda: [
        row("tokumx_insert_10m", "tk.insert.fractal_vs_mmap", "default", "holds", 1.16, 37.4),  # 32x the post's
        row("tokumx_insert_10m", "tk.size.mmap_vs_fractal", "default", "holds", 2.04, 2.35),    # agrees
        row("tokumx_insert_10m", "tk.insert.fractal_vs_mmap", "smoke", "holds", 1.16, 9.0),      # another scale
        row("tokumx_read", "tk.read_only", "default", "holds", 1.05, 3.53),                      # answered below
        row("tokumx_read", "tk.read_only", "default", "holds", 1.05, 3.53, target="uri")])       # not embedded
    explain.write_answer("tokumx_read", {"id": "tk.read_only", "reference_ratio": "1.05", "expect": "greater than 1"},
                         [{"factor": "base", "verdict": "holds", "ratio": 3.53, "run": "/r"}], "default", 1)
    assert ed.differing("default") == {"tokumx_insert_10m": ["tk.insert.fractal_vs_mmap"]}
    assert ed.differing("default", again=True) == {"tokumx_insert_10m": ["tk.insert.fractal_vs_mmap"],
                                                   "tokumx_read": ["tk.read_only"]}
    assert ed.differing("default", only=["tokumx_read"]) == {}
    with pytest.raises(ValueError, match=r"EXPERIMENTS: 'no_such' not an experiment; allowed: flashback_replay"):
        ed.differing("default", only=["no_such"])

    # Never run here: the plan says so instead of a time.
    assert "tokumx_insert_10m (never run here at this scale)" in ed.plan_text(ed.differing("default"), "default")
    # A complete run of 100 s in which lmdb's runner took 30 s and tokumx's 50: 37.5 s and 62.5 s.
    run = tmp_path / "results" / "tokumx_insert_10m" / "20261203-000000-vm"
    for label, seconds in (("lmdb", 30), ("tokumx", 50)):
        (run / label).mkdir(parents=True)
        (run / label / "events.jsonl").write_text(
            json.dumps({"event": "runner", "t": 1000.0}) + "\n" + json.dumps({"event": "done", "t": 1000.0 + seconds}) + "\n")
    (run / "manifest.json").write_text(json.dumps({"status": "complete", "scale": "default", "params": {},
                                                   "started_at": "2026-12-03T00:00:00+00:00",
                                                   "finished_at": "2026-12-03T00:01:40+00:00"}))
    assert ed.system_seconds("tokumx_insert_10m", "default") == {"lmdb": 37.5, "tokumx": 62.5}
    # To the end of the load: lmdb's load ended 20 s in, tokumx recorded none (its whole time).
    (run / "lmdb" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (
        {"event": "runner", "t": 1000.0}, {"event": "phase_end", "phase": "load", "t": 1020.0},
        {"event": "done", "t": 1030.0})))
    assert ed.system_seconds("tokumx_insert_10m", "default", to_end_of_load=True) == {"lmdb": 25.0, "tokumx": 62.5}
    # base, settings and storage run both systems, the cache tokumx alone: 3 x 100 + 62.5 s.
    assert ed.explain_differing("default", dry_run=True) == []
    printed = capsys.readouterr().out
    assert printed.startswith("explain-differing at the default scale: about 6 min in all\n"
                              "tokumx_insert_10m: tk.insert.fractal_vs_mmap: 4 runs, about 6 min\n"
                              "    base: lmdb, tokumx\n")
    assert "    cache size: tokumx (systems[tokumx].options.cache_size_mb=" in printed


def test_a_load_claims_variant_reads_a_run_that_went_on_past_the_same_load(isolated_run):
    """lb.load.disk_vs_ssd's variants stop at the end of the load; the query claims' runs of the
    same settings loaded alike before they measured, and serve them. Another load does not."""
    from enginebench.explain_runs import existing_run
    results = isolated_run / "results" / "linkbench_uncached_disk"
    _manifest(results, "20261204-120000-vm", load_params("linkbench_uncached_disk", "smoke", ["systems[wt.op1].options.journal_compressor=snappy"]))
    load_only = ["systems[wt.op1].measure_requests=false", "systems[rx.op1].measure_requests=false"]
    snappy = ["systems[wt.op1].options.journal_compressor=snappy", *load_only]
    assert existing_run("linkbench_uncached_disk", "smoke", ["wt.op1"], snappy, now=NOON + 600) == results / "20261204-120000-vm"
    assert existing_run("linkbench_uncached_disk", "smoke", ["wt.op1"], load_only, now=NOON + 600) is None
    # The other way round a load-only run does not serve: it never measured the requests.
    _manifest(results, "20261204-120100-vm", load_params("linkbench_uncached_disk", "smoke", load_only))
    assert existing_run("linkbench_uncached_disk", "smoke", ["wt.op1"], now=NOON + 600) is None


def test_a_claim_across_two_experiments_is_planned_in_both(isolated_run):
    from enginebench import explain_differing as ed
    # Asked from either side, its home is the first experiment the claim names: one page, one answer.
    experiments, _claim, _systems, variants = explain.paired_plan("linkbench_uncached_ssd", "lb.load.disk_vs_ssd", "smoke")
    assert experiments == ["linkbench_uncached_disk", "linkbench_uncached_ssd"]
    assert explain.answer_path("linkbench_uncached_ssd", "lb.load.disk_vs_ssd").name == \
        "explain-linkbench_uncached_disk-lb.load.disk_vs_ssd.json"
    alone = ed.planned_runs("linkbench_uncached_ssd", ["lb.load.disk_vs_ssd"], "smoke")
    ran = [variant for variant in variants if not variant.not_run]
    assert len(alone) == 2 * len(ran) and {run[0] for run in alone} == set(experiments)
    # After the SSD's query claim, whose runs go on past the same loads, only the variants that
    # change the load alone (the load's threads, insert grouping) run in the SSD again.
    both = ed.planned_runs("linkbench_uncached_ssd", ["lb.load.disk_vs_ssd", "lb.query.uncached.lsm_vs_btree"], "smoke")
    on_ssd_to_load_end = sorted(run[1] for run in both if run[0] == "linkbench_uncached_ssd" and run[4])
    assert on_ssd_to_load_end == ["insert grouping", "threads"]


def test_a_claim_across_two_experiments_reads_each_variant_in_both(isolated_run, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(tmp_path / "reports"))
    monkeypatch.setattr(explain, "FACTORS", tuple(f for f in explain.FACTORS if f.name == "journal compressor"))
    monkeypatch.setattr(explain, "_threads_of", lambda phase: lambda params, systems: None)
    page, = explain.explain_claims("linkbench_uncached_ssd", ["lb.load.disk_vs_ssd"], scale="smoke")
    assert page.name == "explain-linkbench_uncached_disk-lb.load.disk_vs_ssd.html"
    runs = {exp: sorted(p.name for p in (isolated_run / "results" / exp).iterdir())
            for exp in ("linkbench_uncached_disk", "linkbench_uncached_ssd")}
    assert all(len(found) == 2 for found in runs.values())  # the base and the variant, in each
    answer = explain.read_answer("linkbench_uncached_ssd", "lb.load.disk_vs_ssd")
    variant = answer["variants"][1]
    assert variant["factor"] == "journal compressor" and variant["ratio"] is not None
    # The variant's ratio reads the variant's run on each side, not the newest run or the base.
    text = page.read_text()
    assert (f"linkbench_uncached_disk run {runs['linkbench_uncached_disk'][1]}; "
            f"linkbench_uncached_ssd run {runs['linkbench_uncached_ssd'][1]}") in text
    assert "each variant run in both, set alike" in text


def test_a_claim_across_experiments_reads_the_partner_the_collection_would_choose(isolated_run):
    from enginebench.report.runs import partner_run
    results = isolated_run / "results" / "linkbench_uncached_ssd"
    host = {"host": {"hostname": "vm"}}
    _manifest(results, "20261204-120000-vm", load_params("linkbench_uncached_ssd", "smoke"), **host)
    _manifest(results, "20261204-120500-vm", load_params("linkbench_uncached_ssd", "smoke", ["workload.maxid1=3001"]),
              **host)  # an explain's variant, newer
    mine = {"scale": "smoke", "target": {"kind": "embedded"}, **host}
    assert partner_run("linkbench_uncached_ssd", mine) == results / "20261204-120000-vm"
    assert partner_run("linkbench_uncached_ssd", {**mine, "scale": "default"}) is None
    assert partner_run("linkbench_uncached_ssd", {**mine, "host": {"hostname": "other"}}) is None


def test_a_factor_that_never_acted_in_the_base_repeats_it_and_moves_nothing():
    """At the default scale no system runs the 10 minutes MongoRocks waits before a tombstone
    compaction: the variant without them repeats the base. fb.query_avg read 2.00 there against
    the base's 2.52, which is the spread between two runs, not the factor."""
    base = pl.DataFrame({"system": ["rx", "rx", "lmdb"], "phase": ["load", "run", "run"],
                         "engine.mongorocks.tombstone_compactions": [0, 0, None],
                         "engine.mongorocks.soft_rate_limit_delays": [0, 3, None]})
    run = RunData(Path("/nowhere"), {}, base, pl.DataFrame(), pl.DataFrame())
    tombstones = explain.Variant("tombstone compactions", "", ["systems[rx].options.tombstone_compaction_skips=0"], ["rx"])
    throttle = explain.Variant("write throttle", "", ["systems[rx].options.soft_rate_limit=0"], ["rx"])
    assert "stayed at 0 on rx" in explain.idle_in_base(tombstones, [run])
    assert explain.idle_in_base(throttle, [run]) == ""  # it delayed writes three times
    # To the end of the load, the throttle never acted either.
    load_only = explain.Variant("write throttle", "", throttle.sets, ["rx"], scope=("systems[rx].measure_requests=false",))
    assert explain.idle_in_base(load_only, [run])
    assert explain.idle_in_base(explain.Variant("cache size", "", [], ["rx"]), [run]) == ""  # no counter to read
    claim = {"reference_ratio": "1.20", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "holds", "ratio": 2.52},
            {"factor": "tombstone compactions", "verdict": "holds", "ratio": 1.30, "idle": "stayed at 0"},
            {"factor": "settings", "verdict": "holds", "ratio": 2.32}]
    text = explain.conclusion(claim, rows)
    assert text.startswith("Unexplained by these factors") and "(tried: settings)" in text
    assert "leave their variants repeating it: tombstone compactions 1.30 against the base's 2.52" in text
    assert explain.moved_factors(claim, rows) == []


def test_a_factor_within_the_spread_of_the_bases_repeat_moves_nothing():
    """ib.size (2026-12-05): the base read 0.99 and a repeat of it (the write throttle, idle) 1.10,
    so the verdict turns within the run-to-run spread; 1.04 under RocksDB's scans turns it too
    and moves nothing, while the release's 1.35 lies beyond the spread and moves the ratio."""
    claim = {"reference_ratio": "1.42", "expect": "greater than 1"}
    rows = [{"factor": "base", "verdict": "does not hold", "ratio": 0.99},
            {"factor": "release", "verdict": "holds", "ratio": 1.35},
            {"factor": "rocksdb scans", "verdict": "holds", "ratio": 1.04},
            {"factor": "write throttle", "verdict": "holds", "ratio": 1.10, "idle": "stayed at 0"},
            {"factor": "insert grouping", "verdict": "not run", "ratio": None}]
    assert [r["factor"] for r in explain.within_spread(rows)] == ["rocksdb scans"]
    assert explain.moved_factors(claim, rows) == ["release"]
    text = explain.conclusion(claim, rows)
    assert text.startswith("Factors that move the ratio: release (the verdict turns")
    assert text.endswith("Within that spread of the base, so moving nothing: rocksdb scans 1.04.")
    # Without a repeat of the base there is no spread to judge by: every turn counts.
    assert explain.moved_factors(claim, rows[:3]) == ["release", "rocksdb scans"]


def test_a_sysbench_claim_is_explained_on_the_systems_its_resolver_reads():
    """sb.lsm_vs_btree compares RocksDB with WiredTiger at its 60-s checkpoint: the 900-s systems
    are the checkpoint claim's, so its variants do not run them. sb.tokumxse compares the two
    servers at the memory sizes both ran (32 MB at the default scale): not TokuMX at 96 MB."""
    labels = lambda claim: [s["label"] for s in explain.plan("sysbench_cgroups", claim, "default")[1]]  # noqa: E731
    assert labels("sb.lsm_vs_btree") == ["wt60.8-16", "wt60.16-32", "wt60.32-48", "rx.8-16", "rx.16-32", "rx.32-48"]
    assert labels("sb.checkpoint") == [f"wt{interval}.{size}" for interval in (60, 900)
                                       for size in ("8-16", "16-32", "32-48")]
    assert labels("sb.tokumxse") == ["tokumx.8-16", "tokumxse.8-16"]
    assert labels("sb.fractal_flat") == ["tokumx.8-16", "tokumx.32-48"]


def test_a_checkpoint_variant_keeps_sysbench_reading_the_posts_wiredtiger():
    """The checkpoint variant sets the 60-s WiredTiger systems to 600 s: sb.lsm_vs_btree must still
    read them as its WiredTiger (it read 'not evaluated: needs lsm and btree at the same memory
    size' when the side was picked by a 60-s checkpoint), and only the 900-s systems are the
    checkpoint claim's other side."""
    from enginebench.families.sysbench import report as sysbench
    _claim, systems, variants = explain.plan("sysbench_cgroups", "sb.lsm_vs_btree", "default",
                                             ["checkpoint interval"])
    varied = load_params("sysbench_cgroups", "default", variants[1].run_sets)["systems"]
    wiredtiger = [s for s in varied if s["label"] in variants[1].changes]
    assert {s["options"]["checkpoint_s"] for s in wiredtiger} == {600}
    lsm, btree = sysbench.SIDES["sb.lsm_vs_btree"]
    assert all(btree(s) for s in wiredtiger) and not any(lsm(s) for s in wiredtiger)
    long_side, short_side = sysbench.SIDES["sb.checkpoint"]
    by_label = {s["label"]: s for s in load_params("sysbench_cgroups", "default")["systems"]}
    assert long_side(by_label["wt900.8-16"]) and not short_side(by_label["wt900.8-16"])
    assert short_side(by_label["wt60.8-16"]) and not long_side(by_label["wt60.8-16"])


def test_an_explain_reads_the_sitting_of_its_start(isolated_run):
    """A run 2 h 50 min old when explain-differing started serves its variant even when the
    variant's turn comes an hour later: the batch reads the sitting its plan was made in."""
    results = isolated_run / "results" / "flashback_replay"
    _manifest(results, "20261204-120000-vm", load_params("flashback_replay", "smoke"))
    _claim, _systems, variants = explain.plan("flashback_replay", "fb.writes_fast", "smoke")
    made = []

    def runner(in_exp, changes, sets):
        made.append(changes)
        return results / "made-now"
    start = NOON + 2 * 3600 + 50 * 60
    paths, earlier = explain._variant_runs(["flashback_replay"], "fb.writes_fast", variants[0], "smoke", "embedded",
                                           1, runner, True, started_at=start)
    assert paths == {"flashback_replay": results / "20261204-120000-vm"} and made == []
    # Read from the time of the variant's turn, the run is out of the sitting: it is made again.
    explain._variant_runs(["flashback_replay"], "fb.writes_fast", variants[0], "smoke", "embedded",
                          1, runner, True, started_at=start + 3600)
    assert made == [variants[0].changes]
