"""The crew harness's own time per step, at step 10 and at step 1000 (aim: under 30 ms, no growth).

    python benchmarks/step_overhead.py [--steps 1000]

A replayed model (no API) and a no-op tool (reading a file that does not exist), so what is timed is
the loop itself: the limits check, the agent turn (crew/agent/session.py), the bounded context, the trace events
and the state save (each fsynced). Wall and CPU time per step. Medians over a window of 10 steps around each point.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from crew_rig import build, time_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loop, run, _ = build(Path(tmp), args.steps, lambda i: {"tool_calls": [
            {"name": "read_file", "arguments": {"path": f"missing-{i}.txt"}}]}, record=False)
        wall, cpu = time_steps(loop)
        state_bytes = run.latest_state.stat().st_size
    # The first and last steps are the supervisor's. The CPU time is the process's (tools run in threads),
    # which a busy machine does not inflate; wall time is what a run waits.
    wall, cpu = wall[1:-1], cpu[1:-1]

    def at(series: list[float], step: int) -> float:
        return statistics.median(series[max(0, step - 5): step + 5]) * 1000

    last = len(wall) - 5
    print(f"steps: {len(wall) + 2} (engineer {len(wall)})")
    print(f"{'step':>6} {'wall ms':>8} {'CPU ms':>12}   (medians of 10 steps around each)")
    for step in dict.fromkeys((10, 100, len(wall) // 2, last)):  # --steps 200: step 100 is the middle too
        print(f"{step:>6} {at(wall, step):8.1f} {at(cpu, step):12.1f}")
    print(f"growth from step 10 to {last}: wall {at(wall, last) / at(wall, 10):.2f}x, "
          f"CPU {at(cpu, last) / at(cpu, 10):.2f}x")
    print(f"saved state after the last step: {state_bytes / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
