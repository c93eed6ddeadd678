"""Adding a family and an engine takes the files docs/layout.md ("Adding a family or an engine")
lists, and nothing else: a copy of the repository gains the throwaway family `echo` and engine
`memory` (lib/tests/data/extending), builds its native runner, and every check of
test_registry.py passes there with both in it."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from enginebench.paths import native_runner, repo_root

EXTENDING = Path(__file__).parent / "data" / "extending"
# What a clone holds beyond its sources: builds, environments, results.
NOT_COPIED = {".build", ".venv", ".venv-legacy", ".git", "reports"}
# The registry lines the docs name: one in each list, after the list's opening line.
REGISTRY_LINES = {"lib/enginebench/families/__init__.py": (r"FAMILIES: dict\[str, Family\] = .*\n", "family_line.txt"),
                  "lib/enginebench/engines.py": (r"ENGINES: dict\[str, Engine\] = .*\n", "engine_record.txt")}
RUNNER = "enginebench-runner-extending"


def _copy_repository(to: Path) -> None:
    root = repo_root()

    def skip(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        skipped = {n for n in names if n in NOT_COPIED or n == "__pycache__"} if here == root else {"__pycache__"} & set(names)
        return skipped | ({"results"} if here == root / "data" else set())
    shutil.copytree(root, to, ignore=skip, symlinks=True)


def _add_throwaway_files(copy: Path) -> None:
    for source in EXTENDING.rglob("*"):
        relative = source.relative_to(EXTENDING)
        if source.is_dir() or relative.parent == Path("."):
            continue  # the README and the registry lines, placed below
        if source.suffix == ".rows":
            table = copy / relative.with_suffix(".csv")
            table.write_text(table.read_text() + source.read_text())
            continue
        target = copy / relative.with_name(relative.name.removesuffix(".json"))  # the notebook
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    for path, (opening, line_file) in REGISTRY_LINES.items():
        module = copy / path
        text, count = re.subn(opening, lambda m: m.group(0) + (EXTENDING / line_file).read_text(), module.read_text(), count=1)
        assert count == 1, f"{path}: the registry list's opening line moved; update REGISTRY_LINES"
        module.write_text(text)


def _environment(copy: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(copy / "lib"), "ENGINEBENCH_ROOT": str(copy),
            "ENGINEBENCH_RUNNER": str(native_runner().with_name(RUNNER))}


def _regenerate_engine_defaults(copy: Path) -> None:
    """The step docs/layout.md gives after an engine's defaults change."""
    out = subprocess.run([sys.executable, "-m", "enginebench", "engine-options"], env=_environment(copy),
                         capture_output=True, text=True, timeout=120, check=True)
    (copy / "lib" / "native" / "tests" / "data" / "engine_options.json").write_text(out.stdout)


def _build_runner(copy: Path) -> None:
    """The copy's runner, built in the repository's build folder so the engines' and the driver's
    crates are not compiled again; under its own name, so the repository's runner stays as it is."""
    manifest = copy / "lib" / "native" / "Cargo.toml"
    text = manifest.read_text().replace('name = "enginebench-runner"', f'name = "{RUNNER}"')
    assert text.count(RUNNER) == 2, "the package and the binary are both named enginebench-runner in Cargo.toml"
    # The copy's own crate unoptimised: the registry checks ask what it was built with and open
    # each engine, nothing timed, and an optimised build of the crate is most of this test's time.
    # The dependencies keep the release profile, so they are the repository's, not compiled again.
    manifest.write_text(text + f'\n[profile.release.package.{RUNNER}]\nopt-level = 0\ndebug = false\n')
    build = native_runner().parents[2]  # .build/native/release/enginebench-runner
    env = {**os.environ, "CARGO_TARGET_DIR": str(build / "native"),
           # Every WiredTiger the repository's runner links (tools/build_native.sh): the posts' trees too.
           "EB_WIREDTIGER_BUILD": ":".join(str(out) for out in [build / "wiredtiger" / "out", build / "wiredtiger-2.9.2" / "out",
                                                                *sorted(build.glob("wiredtiger-tag-*/out"))]),
           "EB_ROCKSDB_BUILD": str(build / "rocksdb" / "out"), "EB_LMDB_BUILD": str(build / "lmdb" / "out"),
           "EB_PERCONAFT_BUILDS": ":".join(str(out.parent) for out in sorted(build.glob("perconaft-*/out/release")))}
    out = subprocess.run(["cargo", "build", "--release", "--quiet", "--manifest-path", str(manifest)],
                         env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]


def test_a_throwaway_family_and_engine_pass_every_registry_check():
    # In the build folder, at the same path each time: cargo then rebuilds the copy's runner
    # incrementally instead of adding another build of it.
    copy = native_runner().parents[2] / "extending"
    shutil.rmtree(copy, ignore_errors=True)
    _copy_repository(copy)
    _add_throwaway_files(copy)
    _regenerate_engine_defaults(copy)
    _build_runner(copy)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                          str(copy / "lib" / "tests" / "test_registry.py")],
                         cwd=copy, env=_environment(copy), capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-6000:]
    passed = {line.split("::")[-1] for line in out.stdout.splitlines() if line.startswith("PASSED ")}
    for check in ("test_a_family_is_complete[echo]", "test_an_engine_is_complete[memory]",
                  "test_an_experiment_has_its_posts_facts_and_claims[echo_check]"):
        assert check in passed, out.stdout[-6000:]
