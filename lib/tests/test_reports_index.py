"""make reports: an offline index of every experiment's latest run, checked in headless Chromium."""
import os
import re
import subprocess
import sys
from pathlib import Path

from test_report_renders import CHROMIUM_FLAGS, chromium


def test_index_lists_experiments_with_verdicts_and_working_links(tmp_path):
    env = {**os.environ, "ENGINEBENCH_RESULTS": str(tmp_path / "results"), "ENGINEBENCH_DATA": str(tmp_path / "data"),
           "ENGINEBENCH_REPORTS": str(tmp_path / "reports")}
    # A b-tree and an LSM each (SYSTEMS=), so the claims have their pairs: what is checked here is
    # the index and the comparison, not every engine.
    for exp, system in (("linkbench_cached", "wt.op1,rx.op1"), ("iibench_500m", "rx,wt")):
        subprocess.run([sys.executable, "-m", "enginebench", "run", exp, "--scale", "smoke", "--systems", system],
                       env=env, check=True, capture_output=True, timeout=600)
    subprocess.run([sys.executable, "-m", "enginebench", "run", "iibench_500m", "--scale", "smoke", "--systems",
                    "rx,wt"], env=env, check=True, capture_output=True, timeout=600)  # a second: the first is "earlier"
    out = subprocess.run([sys.executable, "-m", "enginebench", "reports"], env=env, check=True,
                         capture_output=True, text=True, timeout=300)
    index = tmp_path / "reports" / "index.html"
    assert str(index) in out.stdout
    page = index.read_text()
    for exp in ("linkbench_cached", "iibench_500m"):
        assert exp in page
    # Smoke runs: the index says they carry no verdict rather than counting holds.
    assert page.count("smoke: pipeline check, no verdict</span>") == 2 and "hold</span>" not in page
    links = re.findall(r"href='([^']+)'", page)
    assert links and all((index.parent / link).resolve().exists() for link in links)
    assert not re.search(r"(src|href)=[\"']https?://", page)
    # make compare: the two iibench runs, their differences and ratios.
    first, second = sorted((tmp_path / "results" / "iibench_500m").iterdir())
    out = subprocess.run([sys.executable, "-m", "enginebench", "compare", str(first), str(second)], env=env,
                         check=True, capture_output=True, text=True, timeout=300)
    comparison = Path(out.stdout.split("comparison: ")[1].strip())
    text = comparison.read_text()
    assert "B / A" in text and "irate" not in text and "ops/s" in text and first.name in text
    assert "no repeats: noise unknown" in text and "Host-speed probe, A and B" in text
    assert "Verdict per claim, A and B" in text and "p50 and p99 per op type (ms)" in text
    shot = tmp_path / "index.png"
    subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,600",
                    f"--screenshot={shot}", index.as_uri()], capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG"
