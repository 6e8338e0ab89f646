"""The baseline recipes on tiny local models: compression, merging, LoRA and seq2seq fine-tuning with resume."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import torch
from safetensors.torch import load_file

from challenges.framework.data import prepare_data
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from challenges.lib.model_checks import stored_parameters
from tests.challenges.builders import challenge_module, context, tiny_model


def _compress(tmp_path, limit_share: float, *flags: str):
    ctx = context(tmp_path, "edge_llm_compression")
    base = tiny_model(ctx.data_dir / "base_model", "phi", layers=6)
    parameters = stored_parameters(base)
    (ctx.data_dir / "meta.json").write_text(json.dumps({"base_parameters": parameters,
                                                        "memory_limit_bytes": int(limit_share * parameters)}))
    recipe = challenge_module("edge_llm_compression", "baseline/compress.py")
    out = tmp_path / "submission"
    assert recipe.main(["--data", str(ctx.data_dir), "--out", str(out), "--budget-s", "60", *flags]) == 0
    return ctx, base, out


def test_compression_that_fits_in_float16_is_the_unmodified_model(tmp_path):
    # As phi-2 (5.6 GB in float16) under 12 GB: nothing is dropped or pruned, so the baseline scores exactly what
    # the unmodified model scores (phi-2's weights are float16 already; this tiny one's are rounded to it).
    ctx, base, out = _compress(tmp_path, 3.0)  # the smoke preset's limit: 3 bytes per parameter
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 6
    original, compressed = load_file(base / "model.safetensors"), load_file(out / "model.safetensors")
    assert compressed.keys() == original.keys()
    assert all(torch.equal(compressed[k], original[k].to(torch.float16)) for k in original)
    assert challenge_module("edge_llm_compression").check(out, ctx) == []


def test_compression_drops_layers_until_it_fits_the_limit(tmp_path):
    ctx, _, out = _compress(tmp_path, 1.5, "--sparsity", "0.2")  # float16 alone (2 bytes/parameter) does not fit
    config = json.loads((out / "config.json").read_text())
    assert config["num_hidden_layers"] < 6 and config["dtype"] == "float16"
    weights = load_file(out / "model.safetensors")
    assert {t.dtype for t in weights.values()} == {torch.float16}
    assert (weights["model.layers.0.mlp.fc1.weight"] == 0).float().mean() >= 0.19  # 20% magnitude pruning
    assert challenge_module("edge_llm_compression").check(out, ctx) == []


def test_merging_averages_compatible_experts_and_passes_the_checks(tmp_path):
    ctx = context(tmp_path, "llm_merging", meta={"experts": {"a": "a", "b": "b"}, "max_parameters": 10**9})
    for seed, name in enumerate("ab"):
        tiny_model(ctx.data_dir / "experts" / name, "qwen2", seed=seed, tokenizer_dir=tmp_path / "tok")
    recipe = challenge_module("llm_merging", "baseline/merge.py")
    out = tmp_path / "merged"
    assert recipe.main(["--data", str(ctx.data_dir), "--out", str(out), "--budget-s", "60"]) == 0
    a, b, merged = (load_file(p / "model.safetensors") for p in (ctx.data_dir / "experts" / "a",
                                                                  ctx.data_dir / "experts" / "b", out))
    for key in a:
        assert torch.allclose(merged[key], (a[key] + b[key]) / 2, atol=1e-6)
    assert json.loads((out / "merge.json").read_text())["experts"] == ["a", "b"]
    assert challenge_module("llm_merging").check(out, ctx) == []


def test_lora_masks_the_prompt_out_of_the_loss():
    from transformers import AutoTokenizer

    recipe = challenge_module("llm_efficiency", "baseline/lora.py")
    data = prepare_data(load_challenge("llm_efficiency"), "smoke")
    tokenizer = AutoTokenizer.from_pretrained(data.data_dir / "base_model")
    ids, labels = recipe.encode(tokenizer, {"instruction": "What is 2 + 2?", "context": "", "response": "4"}, 512)
    answer = tokenizer("4")["input_ids"] + [tokenizer.eos_token_id]
    assert labels[-len(answer):] == answer and set(labels[:-len(answer)]) == {-100} and len(ids) == len(labels)


def test_lora_trains_with_gradient_checkpointing(tmp_path):
    # On a GPU the recipe recomputes activations to fit a 7B model in 40 GB; the same path, on the CPU here.
    recipe = challenge_module("llm_efficiency", "baseline/lora.py")
    data = prepare_data(load_challenge("llm_efficiency"), "smoke")
    out = tmp_path / "submission"
    assert recipe.main(["--data", str(data.data_dir), "--out", str(out), "--budget-s", "24", "--batch-size", "4",
                        "--gradient-checkpointing", "--checkpoint-every-s", "600"]) == 0
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["steps"] > 0 and summary["train_loss"] == summary["train_loss"]  # trained, finite loss
    merged = load_file(out / "model.safetensors")
    base = load_file(data.data_dir / "base_model" / "model.safetensors")
    assert any(not torch.equal(merged[k], base[k]) for k in base if k in merged)  # the adapters changed weights


def _run_recipe(challenge: str, data_dir, out, budget_s: int) -> subprocess.CompletedProcess:
    folder = load_challenge(challenge).directory
    command = load_challenge(challenge).baseline_command_line(data_dir, out, budget_s)
    return subprocess.run(command, shell=True, cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_a_recipe_whose_budget_is_already_spent_still_trains_one_step(tmp_path):
    import time

    from challenges.lib.finetune import train_until

    model = torch.nn.Linear(2, 1)
    result = train_until(lambda step: model(torch.ones(1, 2)).sum(), model, tmp_path / "ckpt",
                         deadline=time.monotonic() - 1, peak_lr=0.1)
    assert result.steps == 1  # a busy machine that spent the budget before the loop still trains
    again = train_until(lambda step: model(torch.ones(1, 2)).sum(), model, tmp_path / "ckpt",
                        deadline=time.monotonic() - 1, peak_lr=0.1)
    assert again.steps == 2  # a resume moves on too


def test_seq2seq_recipe_trains_resumes_and_is_scored_by_the_harness(tmp_path):
    challenge = load_challenge("math_autoformalization")
    data = prepare_data(challenge, "smoke")
    out = tmp_path / "submission"
    first = _run_recipe("math_autoformalization", data.data_dir, out, budget_s=25)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    steps = json.loads((out / "training_summary.json").read_text())["steps"]
    assert steps > 0
    second = _run_recipe("math_autoformalization", data.data_dir, out, budget_s=15)  # resumes, at least that far
    assert second.returncode == 0 and "resumed from" in second.stdout
    assert json.loads((out / "training_summary.json").read_text())["steps"] >= steps
    assert (out / "model" / "config.json").is_file()

    ctx = context(tmp_path, "math_autoformalization")
    for source, target in ((data.data_dir, ctx.data_dir), (data.private_dir, ctx.private_dir)):
        target.rmdir()
        shutil.copytree(source, target)
    record = evaluate(challenge, out, ctx, tmp_path / "evaluations", timeout_s=120)
    assert record.ok and 0 <= record.score <= 1, record.error
    assert record.details["items"] == 40 and record.details["bleu"] >= 0


def test_autoformalization_scores_exact_predictions_as_one_and_compile_as_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no lean or lake on it
    ctx = context(tmp_path, "math_autoformalization")
    rows = [{"id": f"t{i}", "header": "", "formal_statement": f"theorem t{i} (n : Nat) : n + {i} = {i} + n"}
            for i in range(5)]
    (ctx.private_dir / "references.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = challenge_module("math_autoformalization").score(tmp_path / "sub", ctx)
    assert result.value == pytest.approx(1.0) and result.details["bleu"] == pytest.approx(100.0)
    assert result.details["compile_rate"] is None and result.details["compile_check"].startswith("unavailable")
