"""The bench table: per challenge and model, success rate (improvement over the baseline policy's score at or
above the challenge's threshold, as in MLAgentBench; crashed and timed-out runs fail), mean score and its
standard error, mean time and cost. Written as markdown, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from checkpoints import atomic_write_json, atomic_write_text
from crew.bench.plan import BASELINE, Cell
from crew.run.rundir import RunDir

DEFAULT_THRESHOLD = 0.10


@dataclass
class Row:
    challenge: str
    model: str
    runs: int
    finished: int
    successes: int
    success_rate: float
    score_mean: float | None
    score_se: float | None
    baseline_score: float | None
    time_mean_s: float | None
    cost_mean_usd: float | None


def build_rows(cells: list[Cell]) -> list[Row]:
    results = {cell: _result(cell) for cell in cells}
    rows = []
    for challenge in dict.fromkeys(c.challenge for c in cells):
        reference = _mean([r.get("score") for c, r in results.items()
                           if c.challenge == challenge and c.model == BASELINE])
        for model in dict.fromkeys(c.model for c in cells if c.challenge == challenge):
            mine = [results[c] for c in cells if c.challenge == challenge and c.model == model]
            scores = [r["score"] for r in mine if r.get("score") is not None]
            wins = sum(1 for r in mine if _success(r, reference))
            rows.append(Row(
                challenge=challenge, model=model, runs=len(mine), finished=sum(1 for r in mine if r),
                successes=wins, success_rate=wins / len(mine) if mine else 0.0, score_mean=_mean(scores),
                score_se=(statistics.stdev(scores) / math.sqrt(len(scores)) if len(scores) > 1 else None),
                baseline_score=reference, time_mean_s=_mean([r.get("elapsed_s") for r in mine]),
                cost_mean_usd=_mean([r.get("cost_usd") for r in mine])))
    return rows


def _success(result: dict[str, Any], reference: float | None) -> bool:
    """Improvement over the bench's own baseline score (or the challenge's fixed reference_score, when it states
    one) at or above the threshold; no score is a failure."""
    if result.get("reference_score") is not None:
        reference = result["reference_score"]
    score = result.get("score")
    if score is None or reference is None or result.get("status") != "submitted":
        return False
    direction = (result.get("metric") or {}).get("direction", "max")
    gain = (score - reference) if direction == "max" else (reference - score)
    if reference == 0:
        return gain > 0  # any gain over a zero score is an unbounded relative improvement
    improvement = gain / abs(reference)
    return improvement >= result.get("_threshold", DEFAULT_THRESHOLD)


def _result(cell: Cell) -> dict[str, Any]:
    """The cell's result.json with its challenge's threshold; {} when the run never ended (a failure)."""
    try:
        run = RunDir(cell.run_dir)
        result = json.loads(run.result.read_text())
        config = tomllib.loads(run.run_toml.read_text())
    except (OSError, json.JSONDecodeError, tomllib.TOMLDecodeError):
        return {}
    result["_threshold"] = _threshold(Path(config.get("challenge_dir", "")))
    return result


def _threshold(challenge_dir: Path) -> float:
    try:
        toml = tomllib.loads((challenge_dir / "challenge.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_THRESHOLD
    return float(toml.get("metric", {}).get("success_threshold", DEFAULT_THRESHOLD))


def _mean(values: list[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.fmean(present) if present else None


def to_markdown(rows: list[Row]) -> str:
    lines = ["| challenge | model | runs | finished | success rate | score (mean ± se) | baseline | time | cost |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        score = "n/a" if r.score_mean is None else f"{r.score_mean:.4f}" + (
            f" ± {r.score_se:.4f}" if r.score_se is not None else "")
        lines.append(f"| {r.challenge} | {r.model} | {r.runs} | {r.finished} | {r.successes}/{r.runs} "
                     f"({r.success_rate:.0%}) | {score} | {_f(r.baseline_score)} | "
                     f"{_f(r.time_mean_s, '.0f')}s | ${_f(r.cost_mean_usd, '.2f')} |")
    return "\n".join(lines) + "\n"


def write_tables(root: Path, rows: list[Row]) -> str:
    markdown = to_markdown(rows)
    atomic_write_text(root / "bench.md", markdown)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(asdict(rows[0])) if rows else ["challenge"])
    writer.writeheader()
    writer.writerows(asdict(r) for r in rows)
    atomic_write_text(root / "bench.csv", buffer.getvalue())
    atomic_write_json(root / "bench_results.json", [asdict(r) for r in rows])
    return markdown


def _f(value: float | None, fmt: str = ".4f") -> str:
    return "n/a" if value is None else format(value, fmt)
