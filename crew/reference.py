"""The baseline policy's latest score per (challenge, preset): the reference every crew is compared with."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from challenges.data import cache_root
from checkpoints import atomic_write_json


def _path() -> Path:
    return cache_root() / "baseline_scores.json"


def baseline_score(challenge: str, preset: str) -> float | None:
    path = _path()
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get(f"{challenge}/{preset}", {}).get("score")


def record_baseline_score(challenge: str, preset: str, score: float, run_id: str) -> None:
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        scores = json.loads(path.read_text()) if path.is_file() else {}
        scores[f"{challenge}/{preset}"] = {"score": score, "run_id": run_id}
        atomic_write_json(path, scores)
