"""Scoring a causal language model with lm-evaluation-harness, on hub tasks or local YAML tasks."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Per task, the first metric lm-eval reports from this list is the one averaged.
PRIMARY_METRICS = ("acc", "em", "f1", "exact_match")


@dataclass
class TaskResults:
    """lm-eval's per-task results and, per task, its logged samples (each document's metric values)."""

    results: dict[str, dict[str, Any]]
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def evaluate_tasks(
    model_dir: Path, tasks: list[str], device: str, include_path: Path | None = None,
    batch_size: int = 8, limit: int | None = None,
) -> TaskResults:
    """Run lm-eval's simple_evaluate on a local Hugging Face model folder; return its per-task results and
    samples (log_samples: the per-document results the harness splits into dev and held-out parts)."""
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
        log_samples=True,
    )
    return TaskResults(output["results"], output.get("samples") or {})


def mean_primary_metric(results: dict[str, dict[str, Any]]) -> tuple[float, dict[str, float]]:
    """Average each task's primary metric (accuracy where it has one); return the mean and the per-task values."""
    per_task = {task: float(metrics[f"{name},none"]) for task, (name, metrics) in _primary(results).items()}
    if not per_task:
        raise ValueError(f"lm-eval returned no accuracy-like metric; got tasks {sorted(results)}")
    return sum(per_task.values()) / len(per_task), per_task


def primary_items(output: TaskResults, pooled_as: str | None = None) -> dict[str, dict[str, float]]:
    """Each document's value of its task's primary metric, from the logged samples, grouped as the score
    averages them: by task (the mean of task means, as `mean_primary_metric`), or all in one group named
    `pooled_as` (a group score weighted by task size, as lm-eval's MMLU). Tasks without samples are left out;
    the harness then finds the items do not reproduce the score and makes no split."""
    items: dict[str, dict[str, float]] = {}
    for task, (name, _) in _primary(output.results).items():
        for sample in output.samples.get(task, []):
            value = sample.get(name)
            if isinstance(value, int | float | bool):
                group, item = (pooled_as, f"{task}/{sample['doc_id']}") if pooled_as else (task, str(sample["doc_id"]))
                items.setdefault(group, {})[item] = float(value)
    return items


def _primary(results: dict[str, dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Per task, the name of its primary metric (the first of PRIMARY_METRICS it reports) and its metrics."""
    found = {}
    for task, metrics in sorted(results.items()):
        name = next((n for n in PRIMARY_METRICS if isinstance(metrics.get(f"{n},none"), int | float)), None)
        if name is not None:
            found[task] = (name, metrics)
    return found


def resolve_tasks(names: list[str] | tuple[str, ...]) -> tuple[dict[str, set[tuple[str, str | None]]], list[str]]:
    """Per known task, group or tag name, the (dataset_path, dataset_name) pairs its tasks load, read from
    lm-eval's task index without loading anything; and the names this lm-eval does not know."""
    from lm_eval.tasks import TaskManager

    index = TaskManager().task_index
    resolved, unknown = {}, []
    for name in names:
        if name not in index:
            unknown.append(name)
        else:
            resolved[name] = _datasets_of(name, index, set())
    return resolved, unknown


def prefetch_tasks(names: list[str] | tuple[str, ...]) -> None:
    """Build the tasks as scoring will, so lm-eval downloads their datasets into the datasets cache now; a
    failure names the dataset and the fix (a script dataset, a gated one, no network)."""
    from lm_eval.tasks import TaskManager, get_task_dict

    from challenges.lib.hub_access import HubDataset, HubUnavailable, explain, inspect_dataset

    try:
        get_task_dict(list(names), TaskManager())
    except Exception as err:
        resolved, unknown = resolve_tasks(names)
        if unknown:
            raise HubUnavailable(f"lm-eval {_version()} has no task {unknown}",
                                 "install the lm-eval version the challenge names, or correct the task name",
                                 "files") from err
        for path in sorted({path for pairs in resolved.values() for path, _ in pairs}):
            inspect_dataset(HubDataset(path))  # raises the specific reason when there is one
        raise explain(err, ", ".join(names), "lm-eval task", "main") from err


def _datasets_of(name: str, index, seen: set[str]) -> set[tuple[str, str | None]]:
    from lm_eval.tasks._index import Kind

    if name in seen or name not in index:
        return set()
    seen.add(name)
    entry = index[name]
    if entry.kind == Kind.TAG:
        members = [n for n, e in index.items() if name in e.tags and e.kind != Kind.TAG]
    elif entry.kind == Kind.GROUP:
        listed = (entry.cfg or {}).get("task") or []
        members = [m if isinstance(m, str) else m.get("task") for m in listed]
    else:
        path = (entry.cfg or {}).get("dataset_path")
        return {(path, (entry.cfg or {}).get("dataset_name"))} if path else set()
    found: set[tuple[str, str | None]] = set()
    for member in members:
        if isinstance(member, str):
            found |= _datasets_of(member, index, seen)
    return found


def _version() -> str:
    from importlib.metadata import version

    return version("lm_eval")
