"""The dev / held-out split of a scorer's per-item results.

Agents tune against the scores they see, so after dozens of evaluations the best dev score is biased upward.
A part of every scoring set that no agent ever sees keeps an honest measure: the final submission is chosen
among the best dev records by their held-out score. The split is a fixed function of each item's group and id,
so every evaluation of a run (and of every run) holds out the same items.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any

# The held-out share of the items. Dev gets the larger part because agents make dozens of decisions from it;
# the held-out part only ranks the few finalists (the top 3 by dev), so a third is enough to separate real
# differences from dev overfitting while keeping dev scores close to the full set's.
HELDOUT_FRACTION = 0.3
SALT = "research-crew held-out split v1"  # changing it moves items between parts: old runs would not compare
# How closely the items' mean must reproduce the scorer's own value for the split to be trusted.
TOLERANCE = 1e-6
NO_ITEMS = "no per-item results: no held-out pick"


def is_heldout(group: str, item_id: str) -> bool:
    digest = hashlib.sha256(f"{SALT}\0{group}\0{item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < HELDOUT_FRACTION


def mean_of_groups(items: dict[str, dict[str, float]]) -> float | None:
    """The mean over groups of each group's mean, groups without items left out; None when there are none."""
    means = [sum(values.values()) / len(values) for values in items.values() if values]
    return sum(means) / len(means) if means else None


@dataclass
class SplitScores:
    """A scoring's dev, held-out and full scores; `note` says why there is no held-out score when there is none."""

    dev: float
    heldout: float | None
    full: float
    dev_items: int = 0
    heldout_items: int = 0
    per_group: dict[str, dict[str, float | None]] = field(default_factory=dict)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_scores(value: float, items: Any) -> SplitScores:
    """Dev and held-out scores from per-item results, aggregated as the scorer's value is. Items that do not
    reproduce the value (a scorer whose metric is not a mean of item results) give no split: dev = full."""
    if not items:
        return SplitScores(value, None, value, note=NO_ITEMS)
    problem = _invalid(items)
    if problem:
        return SplitScores(value, None, value, note=f"per-item results unusable ({problem}): no held-out pick")
    full = mean_of_groups(items)
    if full is None or abs(full - value) > TOLERANCE * max(1.0, abs(value)):
        return SplitScores(value, None, value, note=f"the per-item results average to {full!r}, not the scorer's "
                                                    f"value {value!r}: no held-out pick")
    dev: dict[str, dict[str, float]] = {}
    heldout: dict[str, dict[str, float]] = {}
    for group, values in items.items():
        for item_id, result in values.items():
            part = heldout if is_heldout(group, item_id) else dev
            part.setdefault(group, {})[item_id] = float(result)
    per_group = {group: {"dev": mean_of_groups({group: dev.get(group, {})}),
                         "heldout": mean_of_groups({group: heldout.get(group, {})}),
                         "full": mean_of_groups({group: values})} for group, values in items.items()}
    dev_score, heldout_score = mean_of_groups(dev), mean_of_groups(heldout)
    note = ""
    if dev_score is None or heldout_score is None:
        note = "too few items to split: no held-out pick"
        dev_score, heldout_score = value, None
    elif set(dev) != set(heldout):
        note = "some groups have items in one part only; each part averages the groups it has"
    return SplitScores(dev_score, heldout_score, value, dev_items=sum(map(len, dev.values())),
                       heldout_items=sum(map(len, heldout.values())), per_group=per_group, note=note)


def _invalid(items: Any) -> str:
    if not isinstance(items, dict):
        return "not a {group: {item: value}} mapping"
    for group, values in items.items():
        if not isinstance(values, dict):
            return f"group {group!r} is not an {{item: value}} mapping"
        for item_id, result in values.items():
            if not isinstance(result, int | float) or not math.isfinite(result):
                return f"item {group}/{item_id} has the value {result!r}"
    return ""
