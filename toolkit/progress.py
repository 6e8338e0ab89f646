"""Progress and ETA parsed from a job's log: tqdm bars and our recipes' `progress: <done>/<total>` lines."""

from __future__ import annotations

import re
from dataclasses import dataclass

_TQDM = re.compile(
    r"(?P<done>\d+(?:\.\d+)?[kMGT]?)/(?P<total>\d+(?:\.\d+)?[kMGT]?)\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:]+|\?)"
)
_PLAIN = re.compile(r"progress:\s*(?P<done>\d+)\s*/\s*(?P<total>\d+)", re.IGNORECASE)
_SCALE = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


@dataclass(frozen=True)
class Progress:
    done: float
    total: float
    eta_s: float | None
    source: str  # "tqdm" or "progress line"

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def __str__(self) -> str:
        eta = f", ETA {format_duration(self.eta_s)}" if self.eta_s is not None else ", ETA unknown"
        return f"{_num(self.done)}/{_num(self.total)} ({self.fraction:.0%}){eta} [from {self.source}]"


def _num(x: float) -> str:
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


def _scaled(text: str) -> float:
    unit = text[-1] if text[-1] in "kMGT" else ""
    return float(text[: len(text) - len(unit)]) * _SCALE[unit]


def _clock(text: str) -> float | None:
    if "?" in text:
        return None
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    s = int(round(max(seconds, 0)))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def parse_progress(log_tail: str, elapsed_s: float | None = None) -> Progress | None:
    """The most recent progress report in `log_tail`, or None if there is none.

    For plain lines the ETA extrapolates linearly from the job's elapsed time. Plain `progress:` lines, the
    job's own word, are preferred to tqdm bars wherever they are in the window.
    """
    last_tqdm = None
    for last_tqdm in _TQDM.finditer(log_tail):  # noqa: B007 - we want the last match
        pass
    last_plain = None
    for last_plain in _PLAIN.finditer(log_tail):  # noqa: B007
        pass
    # A job's own `progress:` lines win over tqdm bars: a bar may be a later, smaller phase (saving a model).
    if last_tqdm and not last_plain:
        return Progress(
            _scaled(last_tqdm["done"]),
            _scaled(last_tqdm["total"]),
            _clock(last_tqdm["remaining"]),
            "tqdm",
        )
    if last_plain:
        done, total = float(last_plain["done"]), float(last_plain["total"])
        eta = None
        if elapsed_s is not None and done > 0:
            eta = elapsed_s * (total - done) / done
        return Progress(done, total, eta, "progress line")
    return None
