"""Projected model cost of a 24-hour run, with and without prompt caching, from a replayed trajectory.

    python benchmarks/cost_projection.py [--calls-per-hour 40] [--model claude-sonnet-5-5]

The trajectory is the crew loop itself on a replayed engineer that reads file slices (tool outputs of
1-10k characters), so prompts grow to the context cap and are compacted as in a long run. For each call
the prompt is recorded; with caching, the part shared with the same agent's previous prompt is a cache
read (Anthropic caches prefixes of 1024 tokens or more) and the rest is written to the cache (the crew
puts a breakpoint on the latest message); without caching, every prompt token is input. Output tokens
are those of the replayed answers. MLRB's baseline agent spent about $43 a run; the aim is under $10.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from crew_rig import build, time_steps

from crew.models.usage import CallUsage, cost_usd, price_for

MIN_CACHEABLE = 1024


def shared_prefix_tokens(previous: list[tuple[int, int]], current: list[tuple[int, int]], tools: int) -> int:
    """Tokens of the leading messages both prompts share (the system prompt first), plus the tools."""
    shared = tools
    for (old, _), (new, tokens) in zip(previous, current, strict=False):
        if old != new:
            break
        shared += tokens
    return shared


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls-per-hour", type=int, default=40, help="model calls per hour of the run")
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--model", action="append", help="price table entries; repeatable")
    args = parser.parse_args()
    calls = int(args.calls_per_hour * args.hours)
    with tempfile.TemporaryDirectory() as tmp:
        def read_slice(i: int) -> dict:
            start = 1 + (i * 37) % 900
            return {"name": "read_file", "arguments": {"path": "big.txt", "start_line": start,
                                                       "end_line": start + 10 + (i * 13) % 90}}

        loop, recorders = build(Path(tmp), calls, read_slice)
        text = (f"line {n}: " + "lorem ipsum dolor sit amet " * (2 + n % 5) for n in range(1000))
        (loop.rundir.workspace / "big.txt").write_text("\n".join(text))
        time_steps(loop)
    engineer = recorders["engineer"]
    uncached, cached = CallUsage(), CallUsage()
    previous: list[tuple[int, int]] = []
    for prompt in engineer.prompts:
        total = engineer.tool_tokens + sum(tokens for _, tokens in prompt)
        output = 60  # a tool call's JSON; real models add some reasoning text
        uncached = uncached + CallUsage(input=total, output=output)
        shared = shared_prefix_tokens(previous, prompt, engineer.tool_tokens) if previous else 0
        read = shared if shared >= MIN_CACHEABLE else 0
        cached = cached + CallUsage(cache_read=read, cache_write=total - read, output=output)
        previous = prompt
    print(f"{calls} model calls ({args.calls_per_hour}/h for {args.hours:g} h); prompts average "
          f"{uncached.input // len(engineer.prompts)} tokens; {cached.cache_read / uncached.input:.0%} of prompt "
          f"tokens are cache reads")
    print(f"{'model':>20} {'USD/Mtok in/out':>16} {'no caching':>11} {'with caching':>13}")
    for model in args.model or ["claude-sonnet-5-5", "claude-sonnet-4-6"]:
        price = price_for(model)
        print(f"{model:>20} {f'{price.input:g}/{price.output:g}':>16} {cost_usd(model, uncached):>10.2f}$ "
              f"{cost_usd(model, cached):>12.2f}$")


if __name__ == "__main__":
    main()
