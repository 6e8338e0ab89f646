"""MiniPile's recipe: its sizing and schedule (its hub presets are prepared in tests/challenges/test_hub_presets.py)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest

from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge, load_module
from challenges.framework.split import mean_of_groups
from challenges.lib.lm_eval_scoring import evaluate_tasks, mean_primary_metric, primary_items
from challenges.lib.superglue import FULL_TASKS

RECIPE = load_challenge("minipile").directory / "baseline" / "train.py"


@pytest.fixture(scope="module")
def recipe():
    return load_module(RECIPE, "minipile_recipe_for_tests")


def test_model_size_follows_the_budget_and_the_corpus(recipe):
    a100, minipile = 312e12 * recipe.MFU_GUESS["cuda"], 1.5e9

    def size(hours: float, tokens: float | None, max_params: int | None = None):
        return recipe.choose_size(a100, recipe.training_seconds(hours * 3600), max_params, tokens)

    assert size(24, minipile).name == "16L-1024d"  # the full preset: about 4 epochs of MiniPile
    assert size(8, minipile, 30_000_000).name == "8L-512d"  # MLRB mini: ~30M GPT-2
    assert size(1, minipile).params < size(24, minipile).params
    # Repeated data is worth less: the same compute on a smaller corpus buys a smaller model.
    assert size(24, minipile).params < size(24, None).params
    assert size(8, 0.3e9).params < size(8, minipile).params
    assert recipe.choose_size(1e9, 60, None) == recipe.SIZES[0]


def test_scaling_law_counts_repeats_for_less_and_gives_chinchilla_without_them(recipe):
    unique = 1e9
    assert recipe.effective(0.5 * unique, unique, recipe.LAW["R_D"]) == 0.5 * unique
    assert recipe.effective(4 * unique, unique, recipe.LAW["R_D"]) > 0.9 * 4 * unique  # 4 epochs: nearly fresh
    assert recipe.effective(40 * unique, unique, recipe.LAW["R_D"]) < 0.5 * 40 * unique  # 40: much less
    compute = 1e20
    params = min((10 ** (7 + i / 100) for i in range(300)), key=lambda n: recipe.expected_loss(n, compute / (6 * n)))
    assert compute / (6 * params) / params == pytest.approx(20, rel=0.1)  # tokens per parameter at the optimum


def test_schedule_warms_up_then_decays(recipe):
    lrs = [recipe.lr_at(step, total=100, peak=1.0, warmup=10) for step in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)


@pytest.mark.gpu
@pytest.mark.parametrize("options", [[], ["--optimizer", "muon", "--loss-chunk", "1024", "--micro-batch-size", "8"]])
def test_recipe_on_gpu_uses_bf16_compile_and_writes_a_model(tmp_path, options):
    from transformers import AutoModelForCausalLM

    data = prepare_data(load_challenge("minipile"), "smoke")
    out = tmp_path / "model"
    proc = subprocess.run([sys.executable, str(RECIPE), "--data", str(data.data_dir), "--out", str(out),
                           "--budget-s", "120", "--seq-len", "256", *options], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "training_summary.json").read_text())
    assert "device cuda" in proc.stdout and summary["steps"] > 50 and math.isfinite(summary["validation_loss"])
    assert summary["timed_steps"] > 0 and summary["train_loss"] < 7.5  # from ln(4096) = 8.3 at the start
    AutoModelForCausalLM.from_pretrained(out)


@pytest.mark.network
def test_full_scoring_runs_lm_eval_superglue_from_the_hub(tmp_path, recipe):
    data = prepare_data(load_challenge("minipile"), "smoke")
    tokenizer_dir = data.data_dir / "tokenizer"
    size = recipe.SIZES[0]
    model = recipe.GPT(recipe.GPTConfig(4096, 512, size.n_layer, size.n_head, size.n_embd)).to_hf(eos_id=0)
    model.save_pretrained(tmp_path / "model")
    for file in tokenizer_dir.iterdir():
        shutil.copy(file, tmp_path / "model" / file.name)
    output = evaluate_tasks(tmp_path / "model", FULL_TASKS, "cpu", limit=4)
    mean, per_task = mean_primary_metric(output.results)
    assert {"boolq", "cb", "copa", "sglue_rte", "wic", "wsc"} <= set(per_task) and 0 <= mean <= 1
    # Every task's documents come back as items whose mean of task means is the score (the held-out split).
    assert mean_of_groups(primary_items(output)) == pytest.approx(mean, abs=1e-9)
