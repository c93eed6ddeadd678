"""The block throttle's time slice: the period that shapes an emulated device's tail latency.

blk-throttle (cgroup v1 blkio.throttle.*, v2 io.max) does not space IOs out: in each slice a
group may issue limit x slice IOs at once, and the IO after those waits for the next slice. Reads
then take either the real disk's time or up to a whole slice, so p99 and p99.9 of a capped run
sit at one or two slices whatever the engine does (block/blk-throttle.c: DFL_THROTL_SLICE is
HZ / 10, 100 ms). Kernels built with CONFIG_BLK_DEV_THROTTLING_LOW (an option later removed
with the "low" limit) expose it as /sys/block/<disk>/queue/throttle_sample_time, in ms, 1 to 1000,
writable once the disk has a limit. Other kernels have no knob: the slice is 100 ms, which the
device probe (probe.py, `make bench`) shows on each machine.
"""
from __future__ import annotations

from pathlib import Path

# The kernel's default slice (HZ / 10 jiffies is 100 ms at any HZ).
KERNEL_DEFAULT_MS = 100.0
# The slice the storage profiles ask for where the kernel lets it be set: the kernel's own
# default for non-rotational queues (HZ / 50), short enough that a wait for the next slice is
# a few of a 2015 disk's 5-8 ms seek-and-rotation times rather than a dozen of them.
TARGET_MS = 20.0
SYS_BLOCK = Path("/sys/block")
# In a run's scratch folder while the run has changed a slice: "<knob> <previous ms>".
SLICE_UNDO = "throttle_slice.undo"


def disk_name(major: int, minor: int) -> str:
    """The whole disk a device belongs to: the slice, like the caps, is the disk queue's."""
    from .cgroups import whole_disk
    return Path("/sys/dev/block/{}:{}".format(*whole_disk(major, minor))).resolve().name


def knob(disk: str) -> Path:
    return SYS_BLOCK / disk / "queue" / "throttle_sample_time"


def slice_ms(disk: str) -> tuple[float, str]:
    """The slice in force on `disk` and where that figure comes from."""
    path = knob(disk)
    if path.exists():
        return float(path.read_text().strip()), f"{path}"
    return KERNEL_DEFAULT_MS, "kernel default (this kernel has no throttle_sample_time to set it)"


class SliceSetting:
    """Sets the slice on one disk for a run and puts the previous value back at the end.

    The file is per disk, not per group: the previous value is kept (and written in `undo_file`
    when given) so that a run killed before it could restore it is undone by the next run. Two
    runs capping one disk at once share the setting; each records the slice it saw applied."""

    def __init__(self, disk: str, undo_file: Path | None = None):
        self.disk = disk
        self.undo_file = undo_file
        self.previous: str | None = None

    def apply(self, target_ms: float = TARGET_MS) -> str:
        """Returns what was done, in words; never raises for a kernel without the knob."""
        path = knob(self.disk)
        if not path.exists():
            return (f"throttle slice left at the kernel's {KERNEL_DEFAULT_MS:.0f} ms: this kernel has no "
                    f"{path} (CONFIG_BLK_DEV_THROTTLING_LOW), so it cannot be shortened")
        if self.previous is None:  # applied twice, the first value is still the one to put back
            self.previous = path.read_text().strip()
        if self.undo_file is not None:
            self.undo_file.write_text(f"{path} {self.previous}\n")
        path.write_text(f"{int(target_ms)}")
        return f"throttle slice set to {int(target_ms)} ms on {self.disk} (was {self.previous} ms)"

    def restore(self) -> None:
        if self.previous is not None:
            knob(self.disk).write_text(self.previous)
            self.previous = None
        if self.undo_file is not None:
            self.undo_file.unlink(missing_ok=True)


def undo_left(undo_file: Path) -> str | None:
    """Restores a slice a dead run changed and did not put back (its undo file: '<knob> <ms>')."""
    try:
        path, previous = undo_file.read_text().split()
    except (OSError, ValueError):
        return None
    try:
        Path(path).write_text(previous)
        done = f"restored {path} to {previous} ms"
    except OSError as exc:
        done = f"could not restore {path} to {previous} ms: {exc}"
    undo_file.unlink(missing_ok=True)
    return done
