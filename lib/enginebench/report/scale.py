"""The post's scale beside this run's: memory, engine cache, database size, measured duration,
client threads and storage, with the ratio, so a reader sees how far a run is shrunk.

The post's facts are data/reference/setups.csv (one row per experiment and fact, each with its
seed file and the words it comes from); this run's are read from its manifest and intervals."""
from __future__ import annotations

import polars as pl

from ..paths import reference_dir
from .rundata import RunData
from .numbers import number

GIB = 1 << 30
MIB = 1 << 20
FACTS = ("memory", "cache", "database", "measured", "threads", "storage")
LABELS = {"memory": "memory for the server", "cache": "engine cache", "database": "database size at the end",
          "measured": "measured part", "threads": "client threads", "storage": "storage"}
TO_BASE = {"GiB": GIB, "s": 1, "threads": 1, "": 1}  # setups.csv units -> bytes, seconds, counts
NOT_STATED = "not stated"


def post_setup(experiment: str) -> pl.DataFrame:
    """The post's facts for one experiment, as setups.csv gives them."""
    path = reference_dir() / "setups.csv"
    setups = pl.read_csv(path, infer_schema_length=0).fill_null("")
    rows = setups.filter(pl.col("experiment") == experiment)
    if rows.is_empty():
        known = ", ".join(sorted(setups["experiment"].unique()))
        raise ValueError(f"{path}: no rows for experiment {experiment!r} (column experiment); known: {known}")
    return rows


def _post_values(row: dict) -> list[float | str]:
    """A fact's values in base units; several (`;`-separated) where the post ran several sizes."""
    if not row["value"]:
        return []
    if row["unit"] not in TO_BASE:
        raise ValueError(f"setups.csv: unit {row['unit']!r} of {row['experiment']}/{row['fact']}; "
                         f"allowed: {', '.join(TO_BASE)}")
    if not row["unit"]:
        return [row["value"]]
    return [float(v) * TO_BASE[row["unit"]] for v in row["value"].split(";")]


class Described(float):
    """A figure that needs words beside it (the host's RAM where no limit applied; the largest of
    a sweep of client counts): it divides as its number and reads as its text."""

    def __new__(cls, value: float, text: str):
        made = super().__new__(cls, value)
        made.text = text
        return made


def _short(value: float) -> str:
    # Durations and sizes set in the params are mostly whole: "12 s", not "12.0 s".
    return f"{value:,.0f}" if float(value).is_integer() else number(value)


def _size(n: float) -> str:
    return f"{_short(n / GIB)} GB" if n >= GIB else f"{_short(n / MIB)} MB"


def _duration(seconds: float) -> str:
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{_short(seconds / size)} {unit}"
    return f"{_short(seconds)} s"


def show(fact: str, value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Described):
        return value.text
    if fact in ("memory", "cache", "database"):
        return _size(value)
    return _duration(value) if fact == "measured" else f"{value:,.0f}"


# -- this run's side ------------------------------------------------------------------------
def _measured_phase(run: RunData) -> str:
    """The phase a family's figures come from: the query/run phase, or the load for the insert
    tests (which have no `measure` in their phases)."""
    return "run" if (run.manifest["params"].get("phases") or {}).get("measure") else "load"


def _memory(run: RunData, system: dict):
    """The memory the post's figure stands for: the limit, less the process's own memory that the
    limit added (memory_own_mb), since the post's server's own was a small share of its limit."""
    recorded = system.get("resources") or {}
    limit = (recorded.get("memory_limit_mb") or system.get("memory_limit_mb")
             or (run.manifest.get("resources") or {}).get("memory_limit_mb"))
    own = system.get("memory_own_mb") or 0  # the system's params, as the run had them
    if limit and own:
        return Described((limit - own) * MIB, f"{_size((limit - own) * MIB)} (a {limit} MB limit less {own} MB "
                                              "of the process's own memory)")
    if limit:
        return limit * MIB
    host = (run.manifest.get("host") or {}).get("memory_bytes")
    if not host:
        return "no limit; the host's memory was not recorded"
    return Described(host, f"{_size(host)} (the host's RAM: no memory limit)")


def _cache(system: dict):
    config = system.get("engine_config") or system.get("options") or {}
    if config.get("cache_size_mb"):
        return config["cache_size_mb"] * MIB
    return config.get("cache") or "none recorded"  # LMDB: "OS page cache only (memory-mapped)"


def _database(run: RunData, system: dict):
    """`du` of the system's files at the end: the last sample, taken after the runner closed the
    engine (an engine's log is then trimmed by its last checkpoint: PerconaFT's held a gigabyte of
    log during a load whose files came to half that), else the last interval's."""
    if not run.samples.is_empty() and "size_du_bytes" in run.samples.columns:
        sized = run.samples.filter((pl.col("system") == system["label"]) & pl.col("size_du_bytes").is_not_null())
        if sized.height:
            return int(sized.sort("t")["size_du_bytes"][-1])
    if run.intervals.is_empty() or "size_du_bytes" not in run.intervals.columns:
        return "not measured"
    sized = run.intervals.filter((pl.col("system") == system["label"]) & pl.col("size_du_bytes").is_not_null())
    return int(sized.sort("t_end")["size_du_bytes"][-1]) if sized.height else "not measured"


def _measured(run: RunData, system: dict):
    phases = run.manifest["params"].get("phases") or {}
    measure = phases.get("measure") or {}
    planned = measure.get("duration_s")
    if planned and isinstance(measure.get("threads"), list):
        return Described(planned, f"{_duration(planned)} per client count")
    ran = [p["seconds"] for p in system.get("phases") or [] if p.get("phase") == "run"]
    if planned and measure.get("until_steady") and ran:  # ended once steady: what it ran, not its maximum
        return Described(float(ran[0]), f"{_duration(ran[0])} (until steady; at most {_duration(planned)})")
    if planned:
        return float(planned)
    name = _measured_phase(run)  # no planned duration: the phase lasted as long as its work took
    took = [p["seconds"] for p in system.get("phases") or [] if p.get("phase") == name]
    return float(took[0]) if took else "not run"


def _threads(run: RunData, system: dict):
    phases = run.manifest["params"].get("phases") or {}
    threads = (phases.get("measure") or phases.get("load") or {}).get("threads")
    if isinstance(threads, list):  # a sweep of client counts: the post's figure is its largest
        return Described(max(threads), f"{min(threads)} to {max(threads)} (a sweep)")
    return float(threads) if threads else "not recorded"


def _storage(run: RunData, system: dict):
    plan = run.manifest.get("resources") or {}
    profile = plan.get("storage_profile") or "none"
    device = system.get("device") or "unknown device"
    if profile == "none":
        return f"host device {device}, not throttled"
    scale = plan.get("storage_scale", 1.0)
    return (f"host device {device}, throttled to the {profile} profile"
            + (f" at {scale:g} of its caps" if scale != 1.0 else "") + f" ({plan.get('method_io') or 'not enforced'})")


OURS = {"memory": _memory, "cache": lambda run, s: _cache(s), "database": _database, "measured": _measured,
        "threads": _threads, "storage": _storage}


def _grouped(run: RunData, fact: str) -> list[tuple[object, list[str]]]:
    """This run's value of a fact per system, systems with the same value (and words) in one group."""
    groups: dict[tuple, tuple[object, list[str]]] = {}
    for system in run.systems:
        if system.get("status") == "not run":
            continue
        value = OURS[fact](run, system)
        groups.setdefault((value, show(fact, value)), (value, []))[1].append(system["label"])
    return list(groups.values())


def _peers(run: RunData, groups: list[tuple[object, list[str]]], labels: list[str]) -> list[float]:
    """The values a group's is ranked among: those of the groups that share an engine with it,
    since a memory matrix whose limits add each engine's own memory has one ladder per engine."""
    engine = {s["label"]: s["engine"] for s in run.systems}
    mine = {engine[label] for label in labels}
    return [value for value, others in groups
            if not isinstance(value, str) and mine & {engine[label] for label in others}]


def _ratio(ours, post: list, ours_numbers: list[float]) -> float | None:
    """ours / the post's; where the post ran several sizes (sysbench's memory matrix) ours are
    matched to them by rank, smallest with smallest."""
    if isinstance(ours, str) or not post or isinstance(post[0], str):
        return None
    if len(post) == 1:
        return ours / post[0]
    rank = sorted(ours_numbers).index(ours)
    return ours / sorted(post)[rank] if rank < len(post) else None


def scale_mapping(run: RunData) -> pl.DataFrame:
    """One row per fact (per group of systems where they differ): the post's value with its seed
    file, this run's, and this run's over the post's."""
    rows = []
    for fact_row in post_setup(run.manifest["experiment"]).iter_rows(named=True):
        fact = fact_row["fact"]
        post = _post_values(fact_row)
        post_text = " / ".join(show(fact, v) for v in post) or NOT_STATED
        groups = _grouped(run, fact)
        for ours, labels in groups:
            rows.append({"setting": LABELS[fact], "the post": post_text, "source": fact_row["source"],
                         "the post's words": fact_row["quote"], "this run": show(fact, ours),
                         "systems": "all" if len(groups) == 1 else ", ".join(labels),
                         "this run / the post": _ratio(ours, post, _peers(run, groups, labels))})
    return pl.DataFrame(rows, schema={"setting": pl.Utf8, "the post": pl.Utf8, "source": pl.Utf8,
                                      "the post's words": pl.Utf8, "this run": pl.Utf8, "systems": pl.Utf8,
                                      "this run / the post": pl.Float64})
