"""Training throughput of the MiniPile baseline recipe: tokens/s, and model FLOPs utilisation on a GPU.

    python benchmarks/train_throughput.py                 # sizes that suit this device
    python benchmarks/train_throughput.py --size 16L-1024d --steps 30

It times the recipe's own model and step (AdamW, bf16 autocast, SDPA, torch.compile on GPU) on random
tokens, after warm-up steps that include compilation. MFU = achieved model FLOP/s / the GPU's dense bf16
peak, with model FLOPs per token = 6 * (non-embedding + LM-head parameters) + 12 * layers * width * seq
(PaLM's count, attention included). The "full" size is the one the recipe picks for the full preset
(24 h) on the reference A100 (312 TFLOP/s bf16 peak).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from challenges.loader import load_module

RECIPE = Path(__file__).resolve().parents[1] / "challenges" / "minipile" / "baseline" / "train.py"
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10": 125e12, "4090": 165e12}
REFERENCE_GPU_FLOPS, FULL_BUDGET_S, VOCAB = 312e12, 24 * 3600, 32768


def peak_flops(device: str) -> float | None:
    if device != "cuda":
        return None
    name = torch.cuda.get_device_name()
    return next((peak for key, peak in PEAK_BF16.items() if key in name), None)


def measure(recipe, size, device: str, seq_len: int, batch: int, steps: int, warmup: int) -> dict:
    model = recipe.build_model(size, VOCAB, seq_len, eos_id=0).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    step_fn = torch.compile(model) if device == "cuda" else model
    tokens = torch.randint(0, VOCAB, (batch, seq_len), device=device)

    def step():
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = step_fn(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    recipe._sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    recipe._sync(device)
    seconds = time.perf_counter() - start
    tokens_per_s = steps * batch * seq_len / seconds
    matmul_params = size.params + VOCAB * size.n_embd  # blocks and the LM head
    flops_per_token = 6 * matmul_params + 12 * size.n_layer * size.n_embd * seq_len
    peak = peak_flops(device)
    return {"size": size.name, "params_M": sum(p.numel() for p in model.parameters()) / 1e6,
            "tokens_per_s": tokens_per_s, "model_tflops": tokens_per_s * flops_per_token / 1e12,
            "mfu": tokens_per_s * flops_per_token / peak if peak else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", action="append", help="e.g. 6L-384d; repeatable; 'full' for the full preset's")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--seq-len", type=int, default=None)
    args = parser.parse_args()
    recipe = load_module(RECIPE, "minipile_recipe")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    seq_len = args.seq_len or (1024 if device == "cuda" else 128)
    batch = args.batch or (32 if device == "cuda" else 8)
    steps = args.steps or (30 if device == "cuda" else 10)
    full = recipe.choose_size(REFERENCE_GPU_FLOPS * recipe.MFU_GUESS["cuda"], FULL_BUDGET_S, None)
    names = args.size or (["full", "12L-768d"] if device == "cuda" else ["2L-64d", "4L-256d", "6L-384d"])
    sizes = [full if name == "full" else next(s for s in recipe.SIZES if s.name == name) for name in names]
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {name}; torch {torch.__version__}; seq {seq_len}, batch {batch}, {steps} timed steps")
    print(f"full-preset size (24 h on an A100): {full.name}")
    matmul = recipe.measure_matmul_flops(device, torch.bfloat16 if device == "cuda" else torch.float32)
    print(f"measured matmul: {matmul / 1e12:.2f} TFLOP/s")
    print(f"{'size':>10} {'params':>9} {'tokens/s':>11} {'TFLOP/s':>8} {'MFU':>6}")
    for size in sizes:
        row = measure(recipe, size, device, seq_len, batch, steps, warmup=3 if device == "cuda" else 2)
        mfu = f"{row['mfu']:.1%}" if row["mfu"] is not None else "n/a"
        print(f"{row['size']:>10} {row['params_M']:>8.1f}M {row['tokens_per_s']:>11,.0f} "
              f"{row['model_tflops']:>8.3f} {mfu:>6}")


if __name__ == "__main__":
    main()
