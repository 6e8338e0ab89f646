"""A bounded digest of relevant memory for the supervisor's prompt."""

import math
from collections.abc import Callable, Sequence

from memory.records import SimilarHypothesis


def estimate_tokens(text: str) -> int:
    """A conservative token estimate (about 3 characters per token; real tokenizers average ~4)."""
    return math.ceil(len(text) / 3)


def render_digest(
    hits: Sequence[SimilarHypothesis],
    max_tokens: int,
    count_tokens: Callable[[str], int] = estimate_tokens,
) -> str:
    """Lines of the most relevant records, in the given order, never more than `max_tokens`."""
    header = "What earlier attempts found (most relevant first):"
    if not hits or count_tokens(header) > max_tokens:
        return ""
    lines = [header]
    for hit in hits:
        h = hit.hypothesis
        run = f"run {h.run_id}" if h.run_id else "earlier run"
        line = f"- [{h.outcome.describe()}; {run}] {h.statement}"
        candidate = "\n".join([*lines, line])
        if count_tokens(candidate) <= max_tokens:
            lines.append(line)
            continue
        # Fit a shortened last line if a useful part of it still fits, then stop.
        room = max_tokens - count_tokens("\n".join(lines)) - 1
        while len(line) > 40 and count_tokens(line) > room:
            line = line[: int(len(line) * 0.8)].rstrip() + "..."
        if len(line) > 40 and count_tokens("\n".join([*lines, line])) <= max_tokens:
            lines.append(line)
        break
    return "\n".join(lines) if len(lines) > 1 else ""
