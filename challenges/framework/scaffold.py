"""`research-crew challenges new NAME`: a small, valid, runnable challenge folder to start from.

The example is a noisy linear regression: prepare writes visible training data and private test answers,
the scorer checks and scores a predictions file, and the baseline trains with checkpoints.training.
"""

from __future__ import annotations

from pathlib import Path
from string import Template

from challenges.framework.api import ChallengeError
from challenges.framework.validator import NAME_PATTERN, NAME_RULE

FILES = {
    "challenge.toml": '''\
name = "$name"
title = "$name: a new challenge (fill in)"
source = "your source or benchmark"

[metric]
name = "mse"
direction = "min"              # lower is better
success_threshold = 0.10       # a crew succeeds at 10% better than the baseline policy's score

[submission]
description = "a folder with predictions.csv: one number per line, one line per row of data/test_x.csv"

[rules]
allowed = ["any model trained on data/train.csv"]
forbidden = ["reading the private answers or the scorer's files"]

[presets.full]
description = "what a real run uses (hours, GPUs)"
hours = 1
gpus = 0
gpu_memory_gb = 0              # per GPU; jobs see at most this much
disk_gb = 1                    # free disk the data, submissions and scored copies need
download_gb = 0                # what prepare downloads (prepare.py's SOURCES say from where)
score_minutes = 5              # kept for scoring; without it, a quarter of the preset (10 minutes at most)

[presets.smoke]
description = "offline on CPU in a minute or two"
hours = 0.03
gpus = 0
disk_gb = 0.1
score_minutes = 0.5

[baseline]
command = "python baseline/train.py --data {data_dir} --out {submission_dir} --budget-s {budget_s}"
# reference_score = 1.0        # a fixed reference (e.g. a peer suite's published baseline): success is judged
                               # against it; the baseline policy's measured score is reported beside it

[environment]
requirements = []              # pip specifiers the code needs, e.g. ["seaborn>=0.13"]: checked by doctor and
                               # run, installed only with `run --install-requirements`

[feedback]
agents = "dev"                 # or "none": blind, agents see no score (the harness still records it)

# [prepare]                    # what prepare reads from outside this folder: part of the data cache key
# env = ["MY_DATA_DIR"]        # variables (a variable naming a file or folder: its content counts too)
# paths = ["~/downloads/my.zip"]
''',
    "task.md": '''\
# $name

Predict `y` from `x`. The score is the mean squared error of your predictions on a held-out test set
(lower is better).

## Data (read-only, under `data/`)
- `train.csv`: `x,y` rows.
- `test_x.csv`: one `x` per line; the answers are private.

## Submission
A folder with `predictions.csv`: one number per line, in the order of `data/test_x.csv`.

## Baseline
`baseline/train.py`: linear regression by gradient descent, with checkpoints.
''',
    "prepare.py": '''\
"""$name data: visible training rows and test inputs; the test answers go to the private folder."""

import random

from challenges import ScoreContext


def prepare(ctx: ScoreContext) -> None:
    rng = random.Random(0)
    rows = [(x, 3.0 * x - 1.0 + rng.gauss(0, 0.5)) for x in (rng.uniform(-5, 5) for _ in range(300 + 100))]
    train, test = rows[:300], rows[300:]
    (ctx.data_dir / "train.csv").write_text("x,y\\n" + "".join(f"{x},{y}\\n" for x, y in train))
    (ctx.data_dir / "test_x.csv").write_text("".join(f"{x}\\n" for x, _ in test))
    (ctx.private_dir / "test_y.csv").write_text("".join(f"{y}\\n" for _, y in test))
''',
    "scorer.py": '''\
"""$name scoring: rule checks on the predictions file, then mean squared error against the private answers."""

from pathlib import Path

from challenges import Score, ScoreContext


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    file = submission / "predictions.csv"
    if not file.is_file():
        return ["predictions.csv is missing: write one prediction per line of data/test_x.csv"]
    lines = file.read_text().split()
    expected = len((ctx.data_dir / "test_x.csv").read_text().split())
    if len(lines) != expected:
        return [f"predictions.csv has {len(lines)} lines, data/test_x.csv has {expected}"]
    try:
        [float(v) for v in lines]
    except ValueError as err:
        return [f"predictions.csv holds a value that is not a number: {err}"]
    return []


def score(submission: Path, ctx: ScoreContext) -> Score:
    predicted = [float(v) for v in (submission / "predictions.csv").read_text().split()]
    truth = [float(v) for v in (ctx.private_dir / "test_y.csv").read_text().split()]
    mse = sum((p - t) ** 2 for p, t in zip(predicted, truth, strict=True)) / len(truth)
    return Score(mse, {"items": len(truth)})
''',
    "baseline/train.py": '''\
"""$name baseline: linear regression by gradient descent, checkpointed (periodically and on SIGTERM).

    python baseline/train.py --data DATA_DIR --out SUBMISSION_DIR --budget-s SECONDS
"""

import argparse
import shutil
import sys
import time
from pathlib import Path

import torch

from checkpoints.training import TrainingCheckpointer


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, required=True)
    args = parser.parse_args()
    deadline = time.monotonic() + min(args.budget_s * 0.8, 60)
    rows = [tuple(map(float, line.split(","))) for line in (args.data / "train.csv").read_text().split()[1:]]
    x, y = torch.tensor([[r[0]] for r in rows]), torch.tensor([[r[1]] for r in rows])
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    ckpt = TrainingCheckpointer(args.out.with_name(args.out.name + "-checkpoints"), every_s=10)
    step = (ckpt.restore(model, optimizer) or {"step": 0})["step"]
    while step < 2000 and time.monotonic() < deadline and not ckpt.stop_requested:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        ckpt.maybe_save(model, optimizer, step=step)
    ckpt.save(model, optimizer, step=step)
    test = torch.tensor([[float(v)] for v in (args.data / "test_x.csv").read_text().split()])
    with torch.no_grad():
        predictions = model(test).flatten().tolist()
    staging = args.out.with_name(args.out.name + ".partial")
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "predictions.csv").write_text("".join(f"{p}\\n" for p in predictions))
    shutil.rmtree(args.out, ignore_errors=True)
    staging.rename(args.out)
    print(f"trained {step} steps, final loss {loss.item():.4f}")
    return 143 if ckpt.stop_requested else 0


if __name__ == "__main__":
    sys.exit(main())
''',
}


def write_challenge(parent: Path, name: str) -> Path:
    """Write parent/name/ from the template; refuse a bad name or an existing folder."""
    if not NAME_PATTERN.match(name):
        raise ChallengeError(f"'{name}' is not a valid challenge name", f"use {NAME_RULE}")
    folder = Path(parent) / name
    if folder.exists():
        raise ChallengeError(f"{folder} already exists", "choose another name or folder, or remove it first")
    for relative, text in FILES.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(text).safe_substitute(name=name), encoding="utf-8")
    return folder
