"""Training throughput of the MiniPile baseline recipe against a plain GPT-2 step timed the same way.

    python benchmarks/train_throughput.py                         # sizes that suit this device
    python benchmarks/train_throughput.py --size full --steps 40  # the full preset's size (on a GPU)
    git show main:challenges/minipile/baseline/train.py > /tmp/old_train.py
    python benchmarks/train_throughput.py --old-recipe /tmp/old_train.py --repeats 3   # old vs new, one run

For each size, in turn and in one run:
- recipe: the recipe itself in a subprocess (its whole loop: batches from the token file, gradient
  clipping, progress lines, checkpoint checks) on random tokens for warm-up + --steps steps; its
  tokens/s is `tokens_per_s` from its training_summary.json, which leaves out the warm-up steps
  (compilation among them) and includes everything else in the loop.
- reference: a plain nanoGPT-style GPT-2 (in this file, about 50 lines) on one fixed batch: forward,
  cross-entropy, backward, AdamW step, with the recipe's device settings (bf16 autocast, SDPA,
  torch.compile, fused AdamW on a GPU), timed over the same steps after the same warm-up.
- old (with --old-recipe FILE): another recipe file run like the first, e.g. the version on main. A
  recipe from before the compact model reports its own tokens_per_s: step time only, first step included.

ratio = recipe / reference. MFU = model FLOP/s / the GPU's dense bf16 peak, with FLOPs per token
= 6 x (non-embedding + output-layer parameters) + 12 x layers x width x seq (PaLM's count, attention
included). The "full" size is the one the recipe picks for the full preset (24 h on the reference A100,
MiniPile's roughly 1.5B tokens). With --repeats, each figure is the best of that many interleaved runs:
other work on the machine only ever slows a run down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from challenges.framework.loader import load_module

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "challenges" / "minipile" / "baseline" / "train.py"
# Dense bf16 peaks; the first name found in the device name wins, so the more specific come first.
PEAK_BF16 = {"H100 PCIe": 756e12, "H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10": 125e12,
             "4090": 165e12}
REFERENCE_GPU_FLOPS, FULL_BUDGET_S, MINIPILE_TOKENS, VOCAB = 312e12, 24 * 3600, 1_500_000_000, 32768


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.ln1, self.ln2 = heads, nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fc, self.out = nn.Linear(d, 4 * d, bias=False), nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, dim=2))
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class ReferenceGPT(nn.Module):
    """GPT-2 as nanoGPT writes it: the reference a training loop should at least match."""

    def __init__(self, vocab: int, seq_len: int, layers: int, heads: int, d: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def reference_tokens_per_s(size, device: str, seq_len: int, batch: int, steps: int, warmup: int) -> float:
    model = ReferenceGPT(VOCAB, seq_len, size.n_layer, size.n_head, size.n_embd).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    step_fn = torch.compile(model) if device == "cuda" else model
    tokens = torch.randint(0, VOCAB, (batch, seq_len + 1), device=device)

    def step() -> None:
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = step_fn(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    _sync(device)
    return steps * batch * seq_len / (time.perf_counter() - start)


def write_random_data(folder: Path, seq_len: int, batch: int) -> None:
    """A data folder as prepare.py writes one: random tokens, and a word-level tokenizer of VOCAB entries."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    train = rng.integers(0, VOCAB, size=max(64 * batch, 4096) * (seq_len + 1), dtype=np.uint16)
    train.tofile(folder / "train.bin")
    rng.integers(0, VOCAB, size=2 * batch * (seq_len + 1), dtype=np.uint16).tofile(folder / "validation.bin")
    core = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    PreTrainedTokenizerFast(tokenizer_object=core, eos_token="t0").save_pretrained(folder / "tokenizer")
    (folder / "meta.json").write_text(json.dumps({"vocab_size": VOCAB, "tokens": {"train": len(train)}}))


def recipe_tokens_per_s(recipe: Path, data: Path, work: Path, size, seq_len: int, batch: int, micro: int | None,
                        steps: int) -> float:
    """Run a recipe file for warm-up + `steps` steps; its own summary says how fast its loop went."""
    out = work / f"model-{time.monotonic_ns()}"
    command = [sys.executable, str(recipe), "--data", str(data), "--out", str(out), "--budget-s", "7200",
               "--size", size.name, "--seq-len", str(seq_len), "--batch-size", str(batch), "--max-steps", str(steps)]
    if micro and micro != batch:
        command += ["--micro-batch-size", str(micro)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{recipe} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads((out / "training_summary.json").read_text())["tokens_per_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", action="append", help="e.g. 6L-384d; repeatable; 'full' for the full preset's")
    parser.add_argument("--steps", type=int, help="timed steps (after the warm-up); default 30 on GPU, 10 on CPU")
    parser.add_argument("--batch", type=int, help="sequences per step; default 32 on GPU, 8 on CPU")
    parser.add_argument("--micro-batch", type=int, help="the recipe's sequences per forward pass (accumulation)")
    parser.add_argument("--seq-len", type=int, help="default 1024 on GPU, 128 on CPU")
    parser.add_argument("--old-recipe", type=Path, help="another recipe file to time the same way, e.g. main's")
    parser.add_argument("--repeats", type=int, default=1, help="runs per figure; the best is printed")
    args = parser.parse_args()
    recipe = load_module(RECIPE, "minipile_recipe")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    seq_len = args.seq_len or (1024 if device == "cuda" else 128)
    batch = args.batch or (32 if device == "cuda" else 8)
    steps = args.steps or (30 if device == "cuda" else 10)
    warmup = recipe.WARMUP_STEPS[device]
    full = recipe.choose_size(REFERENCE_GPU_FLOPS * recipe.MFU_GUESS["cuda"], recipe.training_seconds(FULL_BUDGET_S),
                              None, MINIPILE_TOKENS)
    names = args.size or (["full", "12L-768d", "8L-512d"] if device == "cuda" else ["2L-64d", "4L-256d", "6L-384d"])
    sizes = [full if name == "full" else next(s for s in recipe.SIZES if s.name == name) for name in names]
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    peak = next((p for key, p in PEAK_BF16.items() if key in name), None) if device == "cuda" else None
    print(f"device: {name}; torch {torch.__version__}; seq {seq_len}, batch {batch}"
          f"{f' ({args.micro_batch} per pass)' if args.micro_batch else ''}, vocab {VOCAB}, {steps} timed steps "
          f"after {warmup} warm-up, best of {args.repeats}")
    print(f"full-preset size (24 h on an A100, MiniPile): {full.name}")
    matmul = recipe.measure_matmul_flops(device, torch.bfloat16 if device == "cuda" else torch.float32)
    print(f"measured matmul: {matmul / 1e12:.2f} TFLOP/s")
    columns = ["size", "params", *(["old"] if args.old_recipe else []), "recipe", "reference", "ratio",
               *(["vs old"] if args.old_recipe else []), "MFU", "ref MFU"]
    print("tokens/s; ratio = recipe / reference")
    print(" ".join(f"{c:>10}" for c in columns))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        write_random_data(data, seq_len, batch)
        for size in sizes:
            runs: dict[str, list[float]] = {"old": [], "recipe": [], "reference": []}
            for _ in range(args.repeats):  # interleaved, so that a busy machine slows all three alike
                if args.old_recipe:
                    runs["old"].append(recipe_tokens_per_s(args.old_recipe, data, Path(tmp), size, seq_len, batch,
                                                           None, warmup + steps))
                runs["recipe"].append(recipe_tokens_per_s(RECIPE, data, Path(tmp), size, seq_len, batch,
                                                          args.micro_batch, warmup + steps))
                runs["reference"].append(reference_tokens_per_s(size, device, seq_len, batch, steps, warmup))
                if device == "cuda":  # the reference's compiled graphs and memory go before the next run
                    torch._dynamo.reset()
                    torch.cuda.empty_cache()
            old, new, ref = (max(runs[k]) if runs[k] else None for k in ("old", "recipe", "reference"))
            flops_per_token = size.flops_per_token(VOCAB, seq_len)
            params = (size.params + (VOCAB + seq_len) * size.n_embd) / 1e6
            row = [size.name, f"{params:.1f}M", *([f"{old:,.0f}"] if old else []), f"{new:,.0f}", f"{ref:,.0f}",
                   f"{new / ref:.2f}", *([f"{new / old:.2f}"] if old else []),
                   f"{new * flops_per_token / peak:.1%}" if peak else "n/a",
                   f"{ref * flops_per_token / peak:.1%}" if peak else "n/a"]
            print(" ".join(f"{c:>10}" for c in row), flush=True)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
