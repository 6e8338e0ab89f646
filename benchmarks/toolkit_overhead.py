"""Overhead of `Toolkit.run_bash("true")`, inside the bubblewrap sandbox and outside it, against a plain
`subprocess.run` of the same command.

All three run `bash -c true` in the same folder; calls rotate (side by side) so drift in machine load hits
each equally. Prints per-call medians and p90s and the ratios. Where bubblewrap cannot run, the sandboxed
column is left out and the reason printed.

    python benchmarks/toolkit_overhead.py [--runs 200]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolkit import Toolkit
from toolkit.sandbox import SandboxPolicy, bwrap_problem

log = logging.getLogger("benchmarks.toolkit_overhead")


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _tool_call(tk: Toolkit) -> Callable[[], None]:
    def call() -> None:
        result = tk.run_bash("true", timeout_s=30)
        assert getattr(result, "exit_code", None) == 0, result

    return call


def measure(runs: int, with_sandbox: bool) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        outside = Toolkit(Path(tmp) / "outside")
        calls: dict[str, Callable[[], object]] = {
            "subprocess.run": lambda: subprocess.run(["bash", "-c", "true"], cwd=outside.workspace, check=True),
            "run_bash, no sandbox": _tool_call(outside),
        }
        if with_sandbox:
            calls["run_bash, bwrap sandbox"] = _tool_call(Toolkit(Path(tmp) / "inside", sandbox=SandboxPolicy()))
        for _ in range(5):  # warm-up: imports, page cache, first log folder
            for call in calls.values():
                call()
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(runs):
            for name, call in calls.items():
                times[name].append(_timed(call))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    problem = bwrap_problem()
    times = measure(args.runs, with_sandbox=problem is None)
    # A benchmark's output is its figures, so it writes to stdout (no logging configuration needed).
    out = sys.stdout
    out.write(f"toolkit overhead: {args.runs} runs of `bash -c true` each, rotating\n")
    if problem:
        out.write(f"(no sandboxed column: {problem})\n")
    base50 = statistics.median(times["subprocess.run"])
    base90 = statistics.quantiles(times["subprocess.run"], n=10)[-1]
    out.write(f"{'':26}{'median':>10}{'p90':>10}{'x subprocess (median)':>24}\n")
    for name, values in times.items():
        p50, p90 = statistics.median(values), statistics.quantiles(values, n=10)[-1]
        out.write(f"{name:26}{p50 * 1e3:>8.2f}ms{p90 * 1e3:>8.2f}ms{p50 / base50:>23.2f}x\n")
    if "run_bash, bwrap sandbox" in times:
        inside = statistics.median(times["run_bash, bwrap sandbox"])
        outside = statistics.median(times["run_bash, no sandbox"])
        out.write(f"sandbox / no sandbox: {inside / outside:.2f}x median; the sandbox adds "
                  f"{(inside - outside) * 1e3:.2f} ms per command\n")
    out.write(f"run_bash (no sandbox) adds {(statistics.median(times['run_bash, no sandbox']) - base50) * 1e3:.2f} ms "
              f"per command over subprocess.run (p90 base {base90 * 1e3:.2f} ms)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
