"""Prompt size per model call over a long replayed run, counted as sent: it must stay under the cap.

    python benchmarks/context_growth.py [--steps 1000] [--cap 32000]

The replayed engineer answers as a real model does: a thought of about 140 tokens before every tool call,
and every fifth call writes a 4,000-character file (long tool arguments); the others read file slices, so
tool outputs of 1-10k characters keep arriving. The size is that of the whole request the Anthropic API
would get (system prompt, tool schemas, messages as JSON), four characters a token: what the replay
client reports as prompt tokens, and what the context calibrates its own estimate against.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from crew_rig import build, read_slice_answer, time_steps, write_big_file

from crew.run.events import ModelResponse
from crew.run.trace import read_events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=32_000, help="the context cap in tokens")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loop, run, _ = build(Path(tmp), args.steps, read_slice_answer, context_tokens=args.cap, record=False)
        write_big_file(run.workspace)
        time_steps(loop)
        calls = [e for e in read_events(run.trace) if isinstance(e, ModelResponse) and e.agent == "engineer"]
        worker = next(iter(loop.workers.values()), None)
        scale = worker.context.scale if worker else None
    prompts = [e.usage["input"] for e in calls]
    outputs = [e.usage["output"] for e in calls]
    print(f"engineer calls: {len(prompts)}; cap {args.cap} tokens; output per call median "
          f"{int(statistics.median(outputs))} tokens" + (f"; learnt scale {scale:.2f}" if scale else ""))
    print(f"{'calls':>12} {'min':>7} {'median':>7} {'max':>7}")
    for lo, hi in ((0, 10), (10, 100), (100, 250), (250, 500), (500, 750), (750, len(prompts))):
        window = prompts[lo:hi]
        if window:
            print(f"{lo + 1:>5}-{hi:<6} {min(window):7d} {int(statistics.median(window)):7d} {max(window):7d}")
    late = prompts[len(prompts) // 2:]
    print(f"maximum {max(prompts)} tokens ({max(prompts) / args.cap:.0%} of the cap); second half: "
          f"median {int(statistics.median(late))}, spread {max(late) - min(late)}")


if __name__ == "__main__":
    main()
