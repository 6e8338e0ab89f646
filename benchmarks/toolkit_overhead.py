"""Overhead of `Toolkit.run_bash("true")` against a plain `subprocess.run` of the same command.

Both run `bash -c true` in the same folder; calls alternate (side by side) so drift in machine load
hits both equally. Prints per-call medians and the ratio.

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
from pathlib import Path

from toolkit import Toolkit

log = logging.getLogger("benchmarks.toolkit_overhead")


def measure(runs: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        tk = Toolkit(Path(tmp) / "run")
        plain: list[float] = []
        tool: list[float] = []
        for _ in range(5):  # warm-up: imports, page cache, first log folder
            tk.run_bash("true", timeout_s=30)
            subprocess.run(["bash", "-c", "true"], cwd=tk.workspace, check=True)
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(["bash", "-c", "true"], cwd=tk.workspace, check=True)
            plain.append(time.perf_counter() - started)
            started = time.perf_counter()
            result = tk.run_bash("true", timeout_s=30)
            tool.append(time.perf_counter() - started)
            assert getattr(result, "exit_code", None) == 0, result
    return plain, tool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    plain, tool = measure(args.runs)
    p50, t50 = statistics.median(plain), statistics.median(tool)
    p90 = statistics.quantiles(plain, n=10)[-1]
    t90 = statistics.quantiles(tool, n=10)[-1]
    # A benchmark's output is its figures, so it writes to stdout (no logging configuration needed).
    out = sys.stdout
    out.write(f"toolkit overhead: {args.runs} runs of `bash -c true`, alternating\n")
    out.write(f"{'':24}{'median':>10}{'p90':>10}\n")
    out.write(f"{'subprocess.run':24}{p50 * 1e3:>8.2f}ms{p90 * 1e3:>8.2f}ms\n")
    out.write(f"{'Toolkit.run_bash':24}{t50 * 1e3:>8.2f}ms{t90 * 1e3:>8.2f}ms\n")
    out.write(f"ratio (run_bash / subprocess.run): {t50 / p50:.2f}x median, {t90 / p90:.2f}x p90\n")
    out.write(f"added per call: {(t50 - p50) * 1e3:.2f} ms (median)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
