"""Local lm-eval tasks over generated or prefetched JSONL items, written as YAML (JSON is valid YAML).

Smoke presets use these in place of the hub tasks; full presets use them too where lm-eval ships no task
(CosmosQA), with items prefetched from the hub at prepare time. Same `simple_evaluate` call either way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, items: Iterable[dict[str, Any]]) -> int:
    """Write one JSON object per line; return how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_task_yaml(task_dir: Path, task: str, data_file: Path, prompt: dict[str, Any], tag: str) -> Path:
    """A multiple-choice accuracy task over `data_file`; `prompt` gives doc_to_text/choice/target."""
    task_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "task": task,
        "tag": [tag],
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"validation": str(Path(data_file).resolve())}},
        "output_type": "multiple_choice",
        "validation_split": "validation",
        "doc_to_target": "label",
        "metric_list": [{"metric": "acc"}],
        "metadata": {"version": 1.0},
        **prompt,
    }
    path = task_dir / f"{task}.yaml"
    path.write_text(json.dumps(spec, indent=2), encoding="utf-8")
    return path
