"""The MiniPile recipe's compact GPT-2: its export to transformers, the chunked loss, Muon with resume,
validation on short splits, and gradient accumulation in the recipe's own loop."""

from __future__ import annotations

import json
import logging
import math
import time
from itertools import islice

import numpy as np
import pytest
import torch

from challenges.framework.loader import load_challenge, load_module
from challenges.lib.corpus import stdlib_docstrings
from challenges.lib.model_checks import check_model_folder
from challenges.lib.pretraining import write_pretraining_data
from challenges.lib.tokens import train_tokenizer
from checkpoints.training import TrainingCheckpointer

RECIPE = load_challenge("minipile").directory / "baseline" / "train.py"


@pytest.fixture(scope="module")
def recipe():
    return load_module(RECIPE, "minipile_recipe_for_gpt_tests")


def tiny_config(recipe, vocab: int = 300):
    return recipe.GPTConfig(vocab_size=vocab, seq_len=16, n_layer=2, n_head=2, n_embd=32)


def trained(recipe, config, steps: int = 3, **kwargs):
    """A model whose weights have moved off their initial values (norm gains included)."""
    torch.manual_seed(0)
    model = recipe.GPT(config, **kwargs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(steps):
        batch = torch.randint(0, config.vocab_size, (4, config.seq_len + 1))
        model(batch[:, :-1], batch[:, 1:]).backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_exported_model_loads_with_transformers_and_gives_the_same_logits(recipe, tmp_path, attention):
    from transformers import AutoModelForCausalLM

    tokenizer = train_tokenizer(islice(stdlib_docstrings(), 200), vocab_size=300, out_dir=tmp_path / "tokenizer")
    config = tiny_config(recipe, len(tokenizer))
    assert config.padded_vocab % 128 == 0 and config.padded_vocab > len(tokenizer)
    model = trained(recipe, config)
    recipe.export(model, tokenizer, tmp_path / "model")

    assert check_model_folder(tmp_path / "model") == []
    hf = AutoModelForCausalLM.from_pretrained(tmp_path / "model", attn_implementation=attention)
    assert type(hf).__name__ == "GPT2LMHeadModel" and hf.config.vocab_size == len(tokenizer)
    ids = torch.randint(0, len(tokenizer), (3, config.seq_len))
    with torch.no_grad():
        ours, theirs = model.eval()(ids)[..., : len(tokenizer)], hf(ids).logits
    torch.testing.assert_close(theirs, ours, atol=1e-5, rtol=1e-5)


def test_chunked_loss_gives_the_plain_loss_and_gradients(recipe):
    config = tiny_config(recipe)
    plain = trained(recipe, config, steps=1)
    chunked = recipe.GPT(config, loss_chunk=7)  # 7 does not divide the 48 rows: a short last chunk
    chunked.load_state_dict(plain.state_dict())
    batch = torch.randint(0, config.vocab_size, (3, config.seq_len + 1))
    losses = [m(batch[:, :-1], batch[:, 1:]) for m in (plain, chunked)]
    for loss in losses:
        loss.backward()
    torch.testing.assert_close(losses[1], losses[0])
    for (name, a), (_, b) in zip(plain.named_parameters(), chunked.named_parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, atol=1e-6, rtol=1e-5, msg=name)
    with torch.no_grad():  # evaluation takes the path that makes no gradients
        torch.testing.assert_close(chunked(batch[:, :-1], batch[:, 1:]), losses[0].detach())


def test_muon_trains_the_block_matrices_and_resumes_exactly(recipe, tmp_path):
    config = tiny_config(recipe)
    batches = [torch.randint(0, config.vocab_size, (4, config.seq_len + 1), generator=torch.Generator().manual_seed(i))
               for i in range(6)]

    def setup(seed: int):
        torch.manual_seed(seed)
        model = recipe.GPT(config)
        return model, recipe.build_optimizer(model, "muon", 1e-3)

    def step(model, optimizer, batch) -> float:
        loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    model, optimizer = setup(0)
    muon = optimizer.optimizers[0]
    assert isinstance(muon, torch.optim.Muon)
    assert {id(p) for g in muon.param_groups for p in g["params"]} == {
        id(p) for n, p in model.named_parameters() if p.dim() == 2 and n.startswith("h.")}
    for batch in batches[:3]:
        step(model, optimizer, batch)
    TrainingCheckpointer(tmp_path, every_s=1e9).save(model, optimizer, step=3)
    expected = [step(model, optimizer, batch) for batch in batches[3:]]

    model2, optimizer2 = setup(1)  # other weights; the checkpoint brings back both optimizers' states
    TrainingCheckpointer(tmp_path).restore(model2, optimizer2)
    assert [step(model2, optimizer2, batch) for batch in batches[3:]] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("tokens", "finite"), [(100, True), (10, True), (1, False), (0, False), (None, False)])
def test_validation_reads_a_short_split_and_is_never_nan_when_there_is_data(recipe, tmp_path, tokens, finite):
    model = trained(recipe, tiny_config(recipe), steps=1)
    path = tmp_path / "validation.bin"
    if tokens is not None:  # 100: fewer than one batch of 4 x 16; 10: shorter than one sequence
        np.arange(tokens, dtype=np.uint16).tofile(path)
    loss = recipe.validation_loss(model, path, seq_len=16, batch_size=4, device="cpu",
                                  deadline=time.monotonic() + 100)
    assert (loss is not None and math.isfinite(loss)) if finite else loss is None


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_data")
    texts = list(islice(stdlib_docstrings(), 400))
    write_pretraining_data(folder, {"train": texts[:360], "validation": texts[360:]}, vocab_size=512)
    return folder


def run_recipe(recipe, capsys, data, out, *extra: str) -> tuple[str, dict]:
    argv = ["--data", str(data), "--out", str(out), "--budget-s", "600", "--size", "2L-64d", "--max-steps", "4",
            "--log-every", "1", "--seq-len", "32", *extra]
    assert recipe.main(argv) == 0
    return capsys.readouterr().out, json.loads((out / "training_summary.json").read_text())


def test_accumulated_micro_batches_give_the_full_batch_loss_curve(recipe, capsys, caplog, tiny_data, tmp_path):
    caplog.set_level(logging.INFO)
    whole, summary = run_recipe(recipe, capsys, tiny_data, tmp_path / "whole", "--batch-size", "4")
    split, _ = run_recipe(recipe, capsys, tiny_data, tmp_path / "split", "--batch-size", "4",
                          "--micro-batch-size", "2")

    def curve(output: str) -> list[float]:
        return [float(line.split()[3]) for line in output.splitlines() if line.startswith("progress: ")]

    assert len(curve(whole)) == 4 and curve(split) == pytest.approx(curve(whole), abs=1e-5)
    assert "batch 4 (2 x 2)" in caplog.text
    meta = json.loads((tiny_data / "meta.json").read_text())
    assert "plan: 2L-64d" in whole and f"epochs of {meta['tokens']['train'] / 1e3:.3g}k" in whole
    assert summary["steps"] == 4 and summary["timed_steps"] == 4 - recipe.WARMUP_STEPS["cpu"]
    assert summary["tokens_per_s"] > 0 and math.isfinite(summary["validation_loss"])
    assert summary["epochs"] == pytest.approx(4 * 4 * 32 / meta["tokens"]["train"])


def test_a_checkpoint_of_another_model_is_refused_with_the_fix(recipe, tiny_data, tmp_path):
    TrainingCheckpointer(tmp_path / "model-checkpoints").save(torch.nn.Linear(2, 2), step=5)
    with pytest.raises(SystemExit, match=r"cannot resume from .*step-000000005.*another --out"):
        recipe.main(["--data", str(tiny_data), "--out", str(tmp_path / "model"), "--budget-s", "600",
                     "--size", "2L-64d", "--max-steps", "2"])
