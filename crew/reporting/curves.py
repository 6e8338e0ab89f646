"""Training curves from job logs: the (step, loss) pairs a recipe prints, whatever else the line holds.

Recognised: `progress: 120/600 loss 3.21` (the recipes' own lines), `step 120 ... loss=3.21`, `step: 120,
loss: 3.21`. A job that prints none of these simply has no curve.
"""

from __future__ import annotations

import re
from pathlib import Path

CURVE_LINE = re.compile(r"\b(?:step|progress)\b[\s:=]*(\d+)(?:/\S+)?.*?\bloss\b[\s:=]*(-?\d+(?:\.\d+)?(?:e-?\d+)?)",
                        re.IGNORECASE)
MAX_POINTS = 2000  # a plot needs no more; longer curves are thinned evenly


def parse_curve(log_path: Path) -> list[tuple[int, float]]:
    """The (step, loss) points of a job's log, in order, thinned to at most MAX_POINTS."""
    points: list[tuple[int, float]] = []
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            for line in log:
                # tqdm's carriage returns put many updates on one line: the last one counts.
                match = CURVE_LINE.search(line.rsplit("\r", 1)[-1])
                if match:
                    points.append((int(match.group(1)), float(match.group(2))))
    except OSError:
        return []
    if len(points) > MAX_POINTS:
        stride = len(points) / MAX_POINTS
        points = [points[int(i * stride)] for i in range(MAX_POINTS)] + [points[-1]]
    return points
