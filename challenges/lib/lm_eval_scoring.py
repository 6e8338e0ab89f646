"""Scoring a causal language model with lm-evaluation-harness, on hub tasks or local YAML tasks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Per task, the first metric lm-eval reports from this list is the one averaged.
PRIMARY_METRICS = ("acc", "em", "f1", "exact_match")


def evaluate_tasks(
    model_dir: Path, tasks: list[str], device: str, include_path: Path | None = None,
    batch_size: int = 8, limit: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Run lm-eval's simple_evaluate on a local Hugging Face model folder; return its per-task results."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    dtype = "bfloat16" if device.startswith("cuda") else "float32"
    task_manager = TaskManager(include_path=str(include_path) if include_path else None)
    output = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir), "dtype": dtype},
        tasks=tasks,
        device=device,
        batch_size=batch_size,
        limit=limit,
        task_manager=task_manager,
        log_samples=False,
    )
    return output["results"]


def mean_primary_metric(results: dict[str, dict[str, Any]]) -> tuple[float, dict[str, float]]:
    """Average each task's primary metric (accuracy where it has one); return the mean and the per-task values."""
    per_task: dict[str, float] = {}
    for task, metrics in sorted(results.items()):
        for name in PRIMARY_METRICS:
            value = metrics.get(f"{name},none")
            if isinstance(value, int | float):
                per_task[task] = float(value)
                break
    if not per_task:
        raise ValueError(f"lm-eval returned no accuracy-like metric; got tasks {sorted(results)}")
    return sum(per_task.values()) / len(per_task), per_task
