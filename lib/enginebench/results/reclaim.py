"""Whether the host evicts idle memory on its own, behind the engines' and the kernel's usual LRU.

Some virtual machines run DAMON with a `pageout` scheme: memory not accessed for a set age is
paged out whatever the free memory. When the scheme covers file pages, the page cache holds only
what was touched recently, so a "cached" experiment (database in the OS page cache) re-reads its
colder parts from the device. The VM this collection was developed on pages out unmapped file
pages idle for 30 s. A run records what it found, and its report says so on top.
"""
from __future__ import annotations

from pathlib import Path

KDAMONDS = Path("/sys/kernel/mm/damon/admin/kdamonds")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _excludes_file_pages(scheme: Path) -> bool:
    """True when a filter rejects all memory that is not anonymous (type anon, matching N: the
    filter applies to non-anonymous pages; allow N: it rejects them), keeping the page cache out."""
    for kind in ("ops_filters", "filters"):
        for flt in sorted((scheme / kind).glob("[0-9]*")):
            if (_read(flt / "type"), _read(flt / "matching"), _read(flt / "allow")) == ("anon", "N", "N"):
                return True
    return False


def proactive_pageout(root: Path = KDAMONDS) -> list[dict]:
    """The running DAMON pageout schemes that can evict the page cache, with the idle age (in
    seconds) after which they act. An empty list: none found (or none readable)."""
    found = []
    for kdamond in sorted(root.glob("[0-9]*")):
        if _read(kdamond / "state") != "on":
            continue
        for context in sorted((kdamond / "contexts").glob("[0-9]*")):
            aggr_us = _read(context / "monitoring_attrs" / "intervals" / "aggr_us")
            for scheme in sorted((context / "schemes").glob("[0-9]*")):
                age = _read(scheme / "access_pattern" / "age" / "min")
                if _read(scheme / "action") != "pageout" or _excludes_file_pages(scheme):
                    continue
                min_age_s = int(age) * int(aggr_us) / 1e6 if age and aggr_us else None
                found.append({"mechanism": "DAMON pageout", "operations": _read(context / "operations"),
                              "min_idle_s": min_age_s, "quota_bytes_per_s": _quota(scheme)})
    return found


def _quota(scheme: Path) -> int | None:
    size, reset_ms = _read(scheme / "quotas" / "bytes"), _read(scheme / "quotas" / "reset_interval_ms")
    if not size or not reset_ms or int(reset_ms) == 0 or int(size) == 0:
        return None
    return int(int(size) * 1000 / int(reset_ms))
