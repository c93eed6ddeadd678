"""What a running experiment shows on the terminal: a bar per phase, or one line per interval."""
from __future__ import annotations

import sys


class Progress:
    """tqdm bars on a terminal; one plain line per interval when headless or in a notebook
    kernel (papermill relays those lines to the terminal running `make experiment`)."""

    def __init__(self, label: str):
        self.label = label
        self.bar = None
        self.plain = not sys.stderr.isatty() or "ipykernel" in sys.modules

    def phase(self, name: str, total: float | None, unit: str) -> None:
        self.close()
        if not self.plain:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=f"{self.label} {name}", unit=unit, leave=True)

    def advance(self, amount: float, line: str) -> None:
        if self.bar is not None:
            self.bar.update(amount)
            self.bar.set_postfix_str(line, refresh=False)
        else:
            print(f"[{self.label}] {line}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def show(progress: Progress, event: dict, expected: dict) -> None:
    kind = event["event"]
    if kind == "phase_start":
        if event["phase"] == "load":
            progress.phase("load", sum(expected.values()), "docs")
        elif event["phase"] in ("run", "warmup"):
            progress.phase(event["phase"], event["duration_s"], "s")
    elif kind == "interval":
        seconds = max(event["t_end"] - event["t_start"], 1e-9)
        # Count what the workload's tables count (e.g. iibench: documents of INSERT calls only).
        accounting = event.get("accounting") or {}
        counted = {name: o for name, o in event["ops"].items()
                   if not accounting.get("rate_ops") or name in accounting["rate_ops"]}
        if accounting.get("rate") == "items":
            amount, unit = sum(o["items"] for o in counted.values()), "docs"
        else:
            amount, unit = sum(o["count"] for o in counted.values()), "ops"
        line = f"{event['phase']} interval {event['interval'] + 1}: {amount / seconds:,.0f} {unit}/s"
        if event["phase"] == "load":
            progress.advance(sum(o["items"] for name, o in event["ops"].items() if name in counted), line)
        else:
            progress.advance(seconds, line)
    elif kind in ("load_verified", "consistency", "failed"):
        summary = {k: v for k, v in event.items() if k not in ("event", "traceback", "examples")}
        progress.advance(0, f"{kind}: {summary}")
