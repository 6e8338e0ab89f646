"""Prompt size per model call over a long replayed run: it must stay under the cap and flat after warm-up.

    python benchmarks/context_growth.py [--steps 1000] [--cap 32000]

The replayed engineer reads slices of a large file, so tool outputs of 1-10k characters keep arriving,
as in a real run. Prompt size is the estimate the context uses (four characters a token) over the
system prompt, the tool schemas and the messages, as the model client counted it for each call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from crew_rig import build, time_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--cap", type=int, default=32_000, help="the context cap in estimated tokens")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        def read_slice(i: int) -> dict:
            start = 1 + (i * 37) % 900
            return {"name": "read_file", "arguments": {"path": "big.txt", "start_line": start,
                                                       "end_line": start + 10 + (i * 13) % 90}}

        loop, _ = build(Path(tmp), args.steps, read_slice, context_tokens=args.cap, record=False)
        lines = (f"line {n}: " + "lorem ipsum dolor sit amet " * (2 + n % 5) for n in range(1000))
        (loop.rundir.workspace / "big.txt").write_text("\n".join(lines))
        time_steps(loop)
        events = [json.loads(line) for line in loop.rundir.trace.read_text().splitlines()]
    prompts = [e["usage"]["input"] for e in events if e["kind"] == "model_response" and e["agent"] == "engineer"]
    print(f"engineer calls: {len(prompts)}; cap {args.cap} tokens (estimated)")
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
