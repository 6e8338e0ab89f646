"""MiniPile's recipe: its sizing and schedule (its hub presets are prepared in tests/challenges/test_hub_presets.py)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest

from challenges.data import prepare_data
from challenges.lib.lm_eval_scoring import evaluate_tasks, mean_primary_metric
from challenges.lib.superglue import FULL_TASKS
from challenges.loader import load_challenge, load_module

RECIPE = load_challenge("minipile").directory / "baseline" / "train.py"


@pytest.fixture(scope="module")
def recipe():
    return load_module(RECIPE, "minipile_recipe_for_tests")


def test_model_size_follows_the_budget(recipe):
    a100 = 312e12 * recipe.MFU_GUESS["cuda"]
    assert recipe.choose_size(a100, 24 * 3600, None).name == "16L-1024d"
    assert recipe.choose_size(a100, 8 * 3600, 30_000_000).name == "8L-512d"  # MLRB mini: ~30M GPT-2
    assert recipe.choose_size(a100, 3600, None).params < recipe.choose_size(a100, 24 * 3600, None).params
    assert recipe.choose_size(1e9, 60, None) == recipe.SIZES[0]


def test_schedule_warms_up_then_decays(recipe):
    lrs = [recipe.lr_at(step, total=100, peak=1.0, warmup=10) for step in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)


@pytest.mark.gpu
def test_recipe_on_gpu_uses_bf16_compile_and_writes_a_model(tmp_path):
    data = prepare_data(load_challenge("minipile"), "smoke")
    out = tmp_path / "model"
    proc = subprocess.run([sys.executable, str(RECIPE), "--data", str(data.data_dir), "--out", str(out),
                           "--budget-s", "120", "--seq-len", "256"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "training_summary.json").read_text())
    assert "device cuda" in proc.stdout and summary["steps"] > 50 and math.isfinite(summary["validation_loss"])


@pytest.mark.network
def test_full_scoring_runs_lm_eval_superglue_from_the_hub(tmp_path, recipe):
    data = prepare_data(load_challenge("minipile"), "smoke")
    tokenizer_dir = data.data_dir / "tokenizer"
    model = recipe.build_model(recipe.SIZES[0], 4096, 512, eos_id=0)
    model.save_pretrained(tmp_path / "model")
    for file in tokenizer_dir.iterdir():
        shutil.copy(file, tmp_path / "model" / file.name)
    results = evaluate_tasks(tmp_path / "model", FULL_TASKS, "cpu", limit=4)
    mean, per_task = mean_primary_metric(results)
    assert {"boolq", "cb", "copa", "sglue_rte", "wic", "wsc"} <= set(per_task) and 0 <= mean <= 1
