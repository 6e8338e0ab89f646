"""Projected model cost of a 24-hour run, from a recorded trajectory, with and without prompt caching and
with either cache lifetime.

    python benchmarks/cost_projection.py [--calls-per-hour 40] [--wait-every 12] [--wait-minutes 20]

The trajectory is the crew loop itself on a replayed engineer that thinks before each call (about 140
tokens), writes files now and then and reads file slices (tool outputs of 1-10k characters), so prompts
grow to the context cap and are compacted as in a long run; each call's request is recorded as sent.
Output tokens are those of the recorded answers. Time: calls come every 3600/calls-per-hour seconds,
and every `wait-every` calls the crew waits `wait-minutes` for a job (wait_for_job: no model calls).

Caching, as Anthropic bills it: the prefix shared with the agent's previous request is a cache read
(0.1x input) if that request's cache is still alive (its lifetime from the last read or write), the rest
is written (1.25x input for the 5-minute cache, 2x for the 1-hour one); prefixes under 1024 tokens are
not cached. "auto" is the crew's policy (crew/agent/models/anthropic_client.py): the 1-hour cache when the
median gap of the recent calls exceeds five minutes. MLRB's baseline agent spent about $43 a run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from crew_rig import build, read_slice_answer, time_steps, write_big_file

from crew.agent.models.anthropic_client import RECENT_CALLS, TTL_GAP_S
from crew.agent.models.usage import price_for
from crew.run.events import ModelResponse
from crew.run.trace import read_events

MIN_CACHEABLE = 1024
TTL_S = {"5m": 300.0, "1h": 3600.0}
WRITE_FACTOR = {"5m": 1.25, "1h": 2.0}


def shared_prefix_tokens(previous: list[tuple[int, int]], current: list[tuple[int, int]], fixed: int) -> int:
    """Tokens of the leading messages both requests share, plus the system prompt and tools."""
    shared = fixed
    for (old, _), (new, tokens) in zip(previous, current, strict=False):
        if old != new:
            break
        shared += tokens
    return shared


def call_times(calls: int, per_hour: float, wait_every: int, wait_s: float) -> list[float]:
    times, t = [], 0.0
    for i in range(calls):
        times.append(t)
        t += 3600 / per_hour + (wait_s if wait_every and i % wait_every == wait_every - 1 else 0.0)
    return times


def auto_ttl(times: list[float], i: int) -> str:
    """The TTL the crew's client writes with at call i (from the gaps between its recent calls)."""
    recent = times[max(0, i - RECENT_CALLS + 1): i + 1]
    gaps = sorted(b - a for a, b in zip(recent, recent[1:], strict=False))
    return "1h" if gaps and gaps[len(gaps) // 2] > TTL_GAP_S else "5m"


def cost(prompts, fixed: int, outputs: list[int], times: list[float], model: str, policy: str | None) -> dict:
    """USD and token totals for one caching policy: None (no caching), "5m", "1h" or "auto"."""
    price = price_for(model)
    usd = read_total = prompt_total = 0.0
    previous, alive_until, ttl = None, -1.0, "5m"
    for i, (prompt, output) in enumerate(zip(prompts, outputs, strict=True)):
        total = fixed + sum(tokens for _, tokens in prompt)
        prompt_total += total
        usd += output * price.output
        if policy is None:
            usd += total * price.input
            continue
        shared = shared_prefix_tokens(previous, prompt, fixed) if previous is not None else 0
        read = shared if shared >= MIN_CACHEABLE and times[i] <= alive_until else 0
        ttl = auto_ttl(times, i) if policy == "auto" else policy
        usd += read * 0.1 * price.input + (total - read) * WRITE_FACTOR[ttl] * price.input
        read_total += read
        previous, alive_until = prompt, times[i] + TTL_S[ttl]
    return {"usd": usd / 1e6, "read_share": read_total / prompt_total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls-per-hour", type=float, default=40, help="model calls per hour while working")
    parser.add_argument("--wait-every", type=int, default=12, help="a job wait after this many calls (0: none)")
    parser.add_argument("--wait-minutes", type=float, default=20)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--model", action="append", help="price table entries; repeatable")
    args = parser.parse_args()
    cycle_s = args.wait_every * 3600 / args.calls_per_hour + args.wait_minutes * 60 if args.wait_every else 0
    calls = int(args.hours * 3600 / cycle_s * args.wait_every) if cycle_s else int(args.calls_per_hour * args.hours)
    with tempfile.TemporaryDirectory() as tmp:
        loop, run, recorders = build(Path(tmp), calls, read_slice_answer)
        write_big_file(run.workspace)
        time_steps(loop)
        calls = [e for e in read_events(run.trace) if isinstance(e, ModelResponse) and e.agent == "engineer"]
    engineer = recorders["engineer"]
    outputs = [e.usage["output"] for e in calls]
    times = call_times(len(outputs), args.calls_per_hour, args.wait_every, args.wait_minutes * 60)
    prompts = engineer.prompts[:len(outputs)]
    average = engineer.fixed_tokens + statistics.mean(sum(t for _, t in p) for p in prompts)
    print(f"{len(outputs)} model calls over {times[-1] / 3600:.1f} h ({args.calls_per_hour:g}/h while working, a "
          f"{args.wait_minutes:g}-minute job wait every {args.wait_every} calls); prompts average {average:.0f} "
          f"tokens, outputs {statistics.mean(outputs):.0f}")
    # The same requests a call every 20 minutes: how the supervisor's calls come (one per subtask or wait).
    sparse = call_times(len(outputs), 3, 0, 0.0)
    for title, when in (("the engineer's timing", times), ("a call every 20 minutes (the supervisor's timing)",
                                                            sparse)):
        print(f"\n{title}: cost of the {len(outputs)} calls; share of prompt tokens read from cache")
        print(f"{'model':>20} {'no caching':>11} {'5m cache':>15} {'1h cache':>15} {'auto (crew)':>15}")
        for model in args.model or ["claude-sonnet-5-5", "claude-sonnet-4-6"]:
            cells = [cost(prompts, engineer.fixed_tokens, outputs, when, model, policy)
                     for policy in (None, "5m", "1h", "auto")]
            text = [f"${cells[0]['usd']:.2f}"] + [f"${c['usd']:.2f} ({c['read_share']:.0%} rd)" for c in cells[1:]]
            print(f"{model:>20} {text[0]:>11} {text[1]:>15} {text[2]:>15} {text[3]:>15}")


if __name__ == "__main__":
    main()
