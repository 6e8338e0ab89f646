"""MiniPile baseline: GPT-2 pretraining sized from the time budget.

    python baseline/train.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS

Packed sequences from the prepared uint16 token file; AdamW with linear warmup and a cosine decay;
bf16 autocast, SDPA attention and torch.compile on a GPU. The model size follows Chinchilla
(about 20 tokens per parameter, so compute C = 6 N D = 120 N^2) from the device's measured matmul
speed and the time budget. Checkpoints (checkpoints.training) every few minutes and on SIGTERM; a
rerun with the same --out resumes from the latest one. Prints `progress: step/total` lines.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from checkpoints.training import TrainingCheckpointer

log = logging.getLogger("minipile.baseline")


@dataclass(frozen=True)
class Size:
    n_layer: int
    n_head: int
    n_embd: int

    @property
    def params(self) -> int:
        """Non-embedding parameters (Kaplan et al.), the N of the scaling laws."""
        return 12 * self.n_layer * self.n_embd**2

    @property
    def name(self) -> str:
        return f"{self.n_layer}L-{self.n_embd}d"


# From tiny (CPU smoke) to GPT-2 medium; n_embd / n_head = 64 except the smallest.
SIZES = [Size(2, 2, 64), Size(2, 4, 128), Size(4, 4, 256), Size(6, 6, 384), Size(8, 8, 512),
         Size(12, 12, 768), Size(16, 16, 1024), Size(24, 16, 1024)]
MFU_GUESS = {"cuda": 0.40, "cpu": 0.30}  # fraction of the measured matmul speed a training step reaches


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared data folder (train.bin, tokenizer/)")
    parser.add_argument("--out", type=Path, required=True, help="where the Hugging Face model folder goes")
    parser.add_argument("--budget-s", type=float, required=True, help="wall-clock seconds for this script")
    parser.add_argument("--checkpoint-dir", type=Path, help="default: <out>-checkpoints")
    parser.add_argument("--seq-len", type=int, help="default: 1024 on GPU, 128 on CPU")
    parser.add_argument("--batch-size", type=int, help="sequences per step; default from the device")
    parser.add_argument("--size", help="force a model size, e.g. 6L-384d")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-every-s", type=float, default=300.0)
    parser.add_argument("--checkpoint-every-steps", type=int, help="also save every N steps")
    parser.add_argument("--max-steps", type=int, help="a fixed schedule length instead of one sized from the budget")
    parser.add_argument("--log-every", type=int, default=10, help="steps between progress lines")
    return parser.parse_args(argv)


def measure_matmul_flops(device: str, dtype: torch.dtype) -> float:
    """FLOP/s of a large square matmul on this device: the ceiling a training step works against."""
    n = 4096 if device == "cuda" else 512
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    repeats, start = (50 if device == "cuda" else 10), time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start)


def choose_size(flops: float, train_s: float, max_params: int | None) -> Size:
    """The largest size whose compute-optimal training (C = 120 N^2) fits the time available."""
    best_n = math.sqrt(flops * train_s / 120)
    fitting = [s for s in SIZES if s.params <= best_n and (max_params is None or s.params <= max_params)]
    return fitting[-1] if fitting else SIZES[0]


def build_model(size: Size, vocab: int, seq_len: int, eos_id: int):
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(vocab_size=vocab, n_positions=seq_len, n_embd=size.n_embd, n_layer=size.n_layer,
                        n_head=size.n_head, bos_token_id=eos_id, eos_token_id=eos_id,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")


class PackedBatches:
    """Fixed-length windows of the token stream in a seeded random order; batch k is a pure function of k."""

    def __init__(self, tokens: np.ndarray, seq_len: int, batch_size: int, seed: int) -> None:
        self.tokens, self.seq_len, self.batch_size = tokens, seq_len, batch_size
        windows = len(tokens) // seq_len
        if windows < batch_size:
            raise SystemExit(f"only {len(tokens)} tokens: too few for a batch of {batch_size}x{seq_len}")
        self.order = np.random.default_rng(seed).permutation(windows)

    def batch(self, index: int) -> torch.Tensor:
        picks = [self.order[(index * self.batch_size + i) % len(self.order)] for i in range(self.batch_size)]
        rows = [self.tokens[p * self.seq_len : (p + 1) * self.seq_len] for p in picks]
        return torch.from_numpy(np.stack(rows).astype(np.int64))


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    started = time.monotonic()
    deadline = started + args.budget_s
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True

    from transformers import AutoTokenizer

    meta = json.loads((args.data / "meta.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(args.data / "tokenizer")
    vocab = len(tokenizer)
    seq_len = args.seq_len or (1024 if device == "cuda" else 128)
    batch_size = args.batch_size or (32 if device == "cuda" else 16)
    ckpt_dir = args.checkpoint_dir or args.out.with_name(args.out.name + "-checkpoints")
    ckpt = TrainingCheckpointer(ckpt_dir, every_s=args.checkpoint_every_s, every_steps=args.checkpoint_every_steps)
    plan_path = ckpt_dir / "plan.json"

    # Keep a tenth of the budget (at least 20 s) to evaluate and write the model folder.
    train_s = max(10.0, args.budget_s - max(20.0, 0.1 * args.budget_s))
    if plan_path.is_file():  # resuming: keep the size and schedule chosen the first time
        plan = json.loads(plan_path.read_text())
    else:
        flops = measure_matmul_flops(device, torch.bfloat16 if device == "cuda" else torch.float32)
        size = next(s for s in SIZES if s.name == args.size) if args.size else choose_size(
            flops * MFU_GUESS[device], train_s, meta.get("max_params"))
        plan = {"size": size.name, "seq_len": seq_len, "batch_size": batch_size, "matmul_flops": flops,
                "total_steps": args.max_steps, "device": device}
        if args.max_steps:
            plan_path.write_text(json.dumps(plan))
    size = next(s for s in SIZES if s.name == plan["size"])
    seq_len, batch_size = plan["seq_len"], plan["batch_size"]
    model = build_model(size, vocab, seq_len, tokenizer.eos_token_id).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log.info("model %s: %.2fM parameters (%.2fM non-embedding), seq %d, batch %d, device %s",
             size.name, n_params / 1e6, size.params / 1e6, seq_len, batch_size, device)

    peak_lr = 6e-4 if size.n_embd >= 512 else 1e-3
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.95), weight_decay=0.1,
                                  fused=device == "cuda")
    state = ckpt.restore(model, optimizer) or {"step": 0, "trained_s": 0.0}
    step, trained_s = state["step"], state["trained_s"]
    step_fn = torch.compile(model) if device == "cuda" else model
    batches = PackedBatches(np.memmap(args.data / "train.bin", dtype=np.uint16, mode="r"), seq_len, batch_size,
                            args.seed)

    def train_step(index: int) -> float:
        batch = batches.batch(index).to(device, non_blocking=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = step_fn(input_ids=batch, labels=batch).loss  # the model shifts labels itself
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    loss, probe = float("nan"), None  # probe: (step, time) where the speed measurement began
    while not ckpt.stop_requested and time.monotonic() < started + train_s:
        total = plan["total_steps"]
        if total is None and step >= 1:  # step 0 includes compilation: time the steps after it
            if probe is None:
                probe = (step, time.monotonic())
            elif step - probe[0] >= 10 and time.monotonic() - probe[1] >= 2.0:
                rate = (step - probe[0]) / (time.monotonic() - probe[1])
                left_s = started + train_s - time.monotonic()
                total = plan["total_steps"] = step + max(10, int(0.9 * rate * left_s))  # 10% slack
                plan_path.write_text(json.dumps(plan))
                log.info("schedule: %d steps at %.2f steps/s", total, rate)
        if total is not None and step >= total:
            break
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, total or 1000, peak_lr, warmup=max(5, min(100, (total or 1000) // 20)))
        step_start = time.monotonic()
        loss = train_step(step)
        step += 1
        trained_s += time.monotonic() - step_start
        if step % args.log_every == 0 or step == total:
            print(f"progress: {step}/{total or '?'} loss {loss:.4f}", flush=True)
        ckpt.maybe_save(model, optimizer, step=step, trained_s=trained_s)

    ckpt.save(model, optimizer, step=step, trained_s=trained_s)
    val_loss = validation_loss(model, args.data / "validation.bin", seq_len, batch_size, device, deadline)
    export(model, tokenizer, args.out)
    summary = {"size": size.name, "parameters": n_params, "steps": step, "tokens": step * batch_size * seq_len,
               "train_loss": loss, "validation_loss": val_loss, "tokens_per_s": step * batch_size * seq_len
               / max(trained_s, 1e-9), "stopped_by_signal": ckpt.stop_requested}
    (args.out / "training_summary.json").write_text(json.dumps(summary, indent=2))
    print("summary: " + json.dumps(summary), flush=True)
    return 143 if ckpt.stop_requested else 0


@torch.no_grad()
def validation_loss(model, path: Path, seq_len: int, batch_size: int, device: str, deadline: float) -> float:
    if not path.is_file() or time.monotonic() > deadline - 10:
        return float("nan")
    tokens = np.memmap(path, dtype=np.uint16, mode="r")
    if len(tokens) // seq_len < batch_size:
        return float("nan")
    model.eval()
    batches = PackedBatches(tokens, seq_len, batch_size, seed=0)
    losses = []
    for index in range(min(20, len(batches.order) // batch_size)):
        batch = batches.batch(index).to(device)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            losses.append(model(input_ids=batch, labels=batch).loss.item())
    model.train()
    return float(np.mean(losses))


def export(model, tokenizer, out: Path) -> None:
    """Write the model folder under a temporary name, then swap it in: a reader never sees half of it."""
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    sys.exit(main())
