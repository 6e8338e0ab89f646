"""Durations as people type them: 24h, 90m, 1.5h, 45s, 1h30m, or plain seconds."""

from __future__ import annotations

import re

from crew.errors import CrewError

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """Seconds in `text`; a CrewError naming the value and the accepted forms otherwise."""
    cleaned = text.strip().lower().replace(" ", "")
    try:
        return _positive(float(cleaned), text)
    except ValueError:
        pass
    if cleaned and PART.sub("", cleaned) == "" and (parts := PART.findall(cleaned)):
        return _positive(sum(float(n) * UNITS[u] for n, u in parts), text)
    raise CrewError(f"cannot read the duration '{text}'", "write it like 24h, 90m, 1h30m, 45s or 3600")


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _positive(seconds: float, text: str) -> float:
    if seconds <= 0:
        raise CrewError(f"the duration '{text}' is not positive", "give a budget above zero, e.g. 24h")
    return seconds
