"""Cost of the crew's checkpoints: save time per step at step 10 and at step 1000 (no growth), and the time
from `resume` to the next model call (aim: under 2 s, without model or embedding loading).

    python benchmarks/checkpoint_cost.py [--steps 1000]

The crew loop runs on a replayed model with tool outputs of 1-10k characters; each save (journal append
and snapshot, both fsynced) is timed. Then a fresh loop resumes from the saved state as `resume` does:
read the snapshot and the message journal, rebuild the agents and their contexts, and reach the next
model call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from crew_rig import build, time_steps

from crew.agent.models.errors import ModelExhausted
from crew.loop.snapshots import load_journal, load_snapshot


def read_slice(i: int) -> dict:
    start = 1 + (i * 37) % 900
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt", "start_line": start,
                                                               "end_line": start + 40}}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ckpt-cost-"))
    loop, run, _ = build(root, args.steps, read_slice, record=False)
    (run.workspace / "big.txt").write_text("\n".join(f"line {n}: " + "lorem ipsum " * 20 for n in range(1000)))
    saves: list[float] = []
    original = loop.save

    def timed_save(*a):
        start = time.perf_counter()
        original(*a)
        saves.append(time.perf_counter() - start)

    loop.save = timed_save
    time_steps(loop)
    state_dir = run.state
    journal_mb = (state_dir / "messages.jsonl").stat().st_size / 1e6

    def at(step: int) -> float:
        return statistics.median(saves[max(0, step - 5): step + 5]) * 1000

    print(f"saves: {len(saves)}; snapshot {run.latest_state.stat().st_size / 1024:.1f} KiB; "
          f"message journal {journal_mb:.1f} MB")
    for step in (10, len(saves) // 2, len(saves) - 6):
        print(f"save time around step {step:>5}: {at(step):6.2f} ms (median of 10)")

    # Resume: a new loop on the same run directory, as `research-crew resume` builds it.
    fresh, _, clients = build(root, 0, read_slice, record=False, existing_run=run)
    first_call: list[float] = []
    engineer = clients["engineer"]

    async def first_answer(*a, **k):
        first_call.append(time.perf_counter())
        raise ModelExhausted("benchmark: stop at the first model call")

    engineer.create = first_answer
    start = time.perf_counter()
    snapshot, journal = load_snapshot(state_dir), load_journal(state_dir)
    fresh.restore(snapshot, journal)
    restored = time.perf_counter()
    asyncio.run(fresh.run())
    print(f"resume to the next model call: {first_call[0] - start:.3f} s (reading and restoring the state "
          f"{restored - start:.3f} s, from step {snapshot['step']}, {len(journal)} journal messages)")


if __name__ == "__main__":
    main()
