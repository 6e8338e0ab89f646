"""Experiment sizes: what a short, medium and long job has cost so far in this run, so the supervisor can size
the next one (short fixed-length experiments first, then the winner scaled up)."""

from __future__ import annotations

import statistics
from typing import Any

from crew.run.durations import format_duration

# Shares of the whole budget that bound each size; a job is sized by the wall time it took (or has taken).
SIZES = (("short", 0.05), ("medium", 0.20), ("long", 1.0))


def size_of(runtime_s: float, budget_s: float) -> str:
    return next(name for name, share in SIZES if runtime_s <= share * budget_s)


def size_bounds(budget_s: float) -> str:
    """The sizes in minutes for this budget, e.g. 'short ≤ 1h12m, medium ≤ 4h48m, long above'."""
    return ", ".join(f"{name} ≤ {format_duration(share * budget_s)}" for name, share in SIZES[:-1]) + ", long above"


def experiment_costs(jobs: list[Any], records: list[Any], budget_s: float, better: Any) -> str:
    """One line per size with jobs: how many, their median wall time and GPU time, and the best score their
    evaluations reached. `jobs` are toolkit JobStatus objects; `records` the ledger's evaluations."""
    by_size: dict[str, list[Any]] = {}
    for status in jobs:
        runtime = status.runtime_s()
        if runtime is not None:
            by_size.setdefault(size_of(runtime, budget_s), []).append(status)
    lines = []
    for name, _ in SIZES:
        group = by_size.get(name, [])
        if not group:
            continue
        walls = [s.runtime_s() for s in group]
        gpu_min = [s.runtime_s() * len(s.record.devices or []) / 60 for s in group]
        ids = {s.record.id for s in group}
        scored = [r for r in records if r.ok and r.experiment.get("job") in ids]
        best = None
        for record in scored:
            best = record if best is None or better(record.score, best.score) else best
        running = sum(s.running for s in group)
        lines.append(f"- {name}: {len(group)} job(s){f' ({running} running)' if running else ''}, median "
                     f"{format_duration(statistics.median(walls))} wall"
                     + (f", {statistics.median(gpu_min):.1f} GPU-min" if any(gpu_min) else ", CPU only")
                     + (f"; best {best.score:.4f} ({best.id})" if best else "; no evaluation yet"))
    return "\n".join(lines) or "No jobs yet."
