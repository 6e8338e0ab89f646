"""MiniPile baseline: a GPT-2 pretrained from scratch, sized from the time budget and the corpus.

    python baseline/train.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS

The model is GPT-2 written compactly (gpt.py, beside this file) and exported at the end as a transformers
GPT2LMHeadModel, so AutoModelForCausalLM and lm-eval load it as any GPT-2. Packed sequences from the
prepared uint16 token file; AdamW (or Muon for the matrices: --optimizer muon) with linear warmup and a
cosine decay (fused AdamW); --batch-size sequences per step, reached by gradient accumulation. On a GPU:
bf16 autocast, flash attention, torch.compile, batches read into pinned memory and copied while the GPU
works, and no wait on the GPU except at progress lines and checkpoints. On a CPU: the loss in chunks.

The size is the one with the lowest expected loss for the compute at hand (the device's measured matmul
speed, an expected utilisation, the time) and the corpus's token count: the data-constrained scaling law
of Muennighoff et al. (2023) counts repeated epochs for less (about 4 are nearly as good as fresh data,
returns fall after), and with unlimited data it gives Chinchilla's 20 tokens per parameter. It prints the
size, the tokens and the epochs. Checkpoints (checkpoints.training) every few minutes and on SIGTERM; a
rerun with the same --out resumes from the latest one. Prints `progress: step/total loss` lines.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from gpt import GPT, GPTConfig

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

    def flops_per_token(self, vocab: int, seq_len: int) -> float:
        """Training FLOPs per token: 6 x (blocks + output layer) + attention (PaLM's count)."""
        return 6 * (self.params + vocab * self.n_embd) + 12 * self.n_layer * self.n_embd * seq_len


# From tiny (CPU smoke) to GPT-2 medium; n_embd / n_head = 64 except the smallest.
SIZES = [Size(2, 2, 64), Size(2, 4, 128), Size(4, 4, 256), Size(6, 6, 384), Size(8, 8, 512),
         Size(12, 12, 768), Size(16, 16, 1024), Size(24, 16, 1024)]
MFU_GUESS = {"cuda": 0.40, "cpu": 0.30}  # fraction of the measured matmul speed a training step reaches
WARMUP_STEPS = {"cuda": 3, "cpu": 1}  # steps of each process left out of tokens_per_s: compilation, allocation
# Muennighoff et al. 2023, "Scaling Data-Constrained Language Models": their fit of Chinchilla's
# L = E + A / N'^alpha + B / D'^beta, where D' counts tokens beyond the first epoch for less (decay
# constant R_D*, in epochs) and N' counts parameters beyond what the unique tokens support for less (R_N*).
LAW = {"E": 1.87, "A": 521.0, "B": 1488.0, "alpha": 0.353, "beta": 0.353, "R_D": 15.387, "R_N": 5.309}
TOKENS_PER_PARAM = 20  # Chinchilla's compute-optimal ratio, which the law above also gives


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared data folder (train.bin, tokenizer/)")
    parser.add_argument("--out", type=Path, required=True, help="where the Hugging Face model folder goes")
    parser.add_argument("--budget-s", type=float, required=True, help="wall-clock seconds for this script")
    parser.add_argument("--checkpoint-dir", type=Path, help="default: <out>-checkpoints")
    parser.add_argument("--seq-len", type=int, help="default: 1024 on GPU, 128 on CPU")
    parser.add_argument("--batch-size", type=int, help="sequences per optimizer step; default 64 on GPU, 16 on CPU")
    parser.add_argument("--micro-batch-size", type=int,
                        help="sequences per forward pass (the rest by gradient accumulation); default 32 on GPU")
    parser.add_argument("--size", help="force a model size, e.g. 6L-384d")
    parser.add_argument("--optimizer", choices=("adamw", "muon"), default="adamw",
                        help="muon: Muon for the block matrices, AdamW for embeddings and norms")
    parser.add_argument("--loss-chunk", type=int,
                        help="rows per cross-entropy chunk, 0 for the plain loss; default: plain on GPU "
                             "(torch.compile fuses it), chunks sized by width and vocabulary on CPU")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile on a GPU")
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


def training_seconds(budget_s: float) -> float:
    """The budget less a tenth (at least 20 s) kept to evaluate and write the model folder."""
    return max(10.0, budget_s - max(20.0, 0.1 * budget_s))


def effective(seen: float, unique: float, decay: float) -> float:
    """What `seen` (tokens or parameters) is worth when only `unique` of it is new: each repeat is worth a
    little less than the one before, and the total approaches unique x (1 + decay)."""
    if seen <= unique:
        return seen
    return unique + unique * decay * (1 - math.exp(-(seen / unique - 1) / decay))


def expected_loss(params: float, tokens: float, unique_tokens: float | None = None) -> float:
    """The data-constrained scaling law's loss for `params` trained on `tokens`, `unique_tokens` of them new."""
    unique = min(tokens, unique_tokens or math.inf)
    d = effective(tokens, unique, LAW["R_D"])
    n = effective(params, unique / TOKENS_PER_PARAM, LAW["R_N"])  # beyond what the unique tokens support
    return LAW["E"] + LAW["A"] / n ** LAW["alpha"] + LAW["B"] / d ** LAW["beta"]


def choose_size(flops: float, train_s: float, max_params: int | None, train_tokens: int | None = None,
                vocab: int = 32768, seq_len: int = 1024) -> Size:
    """The size with the lowest expected loss after `train_s` seconds at `flops` model FLOP/s on a corpus of
    `train_tokens` (None: unlimited), among those within max_params."""
    fitting = [s for s in SIZES if max_params is None or s.params <= max_params] or SIZES[:1]
    return min(fitting, key=lambda s: expected_loss(s.params, planned_tokens(s, flops, train_s, vocab, seq_len),
                                                    train_tokens))


def planned_tokens(size: Size, flops: float, train_s: float, vocab: int, seq_len: int) -> float:
    return flops * train_s / size.flops_per_token(vocab, seq_len)


class PackedBatches:
    """Windows of seq_len + 1 tokens (inputs and their next-token targets) in a seeded random order; batch k
    is a pure function of k, so a resumed run reads what the first one would have."""

    def __init__(self, tokens: np.ndarray, seq_len: int, batch_size: int, seed: int) -> None:
        self.tokens, self.seq_len, self.batch_size = tokens, seq_len, batch_size
        self.windows = (len(tokens) - 1) // seq_len
        if self.windows < batch_size:
            raise SystemExit(f"only {len(tokens)} tokens: too few for a batch of {batch_size}x{seq_len}")
        self.order = np.random.default_rng(seed).permutation(self.windows)
        self.offsets = np.arange(seq_len + 1)

    def batch(self, index: int) -> torch.Tensor:
        picks = self.order[(index * self.batch_size + np.arange(self.batch_size)) % self.windows]
        return torch.from_numpy(self.tokens[picks[:, None] * self.seq_len + self.offsets].astype(np.int64))


def device_batches(batches: PackedBatches, start: int, device: str) -> Iterator[torch.Tensor]:
    """Batches start, start + 1, ... on the device. The next batch is read, pinned and its copy queued
    before the current one is handed out, so on a GPU the data is there before the step needs it."""

    def load(index: int) -> torch.Tensor:
        batch = batches.batch(index)
        return batch.pin_memory().to(device, non_blocking=True) if device == "cuda" else batch

    pending = load(start)
    for index in range(start + 1, sys.maxsize):
        current, pending = pending, load(index)
        yield current


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    started = time.monotonic()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(args.seed)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    # -- config: the corpus, and the plan (size, batch, optimizer, schedule), kept across resumes ---------------
    from transformers import AutoTokenizer

    meta = json.loads((args.data / "meta.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(args.data / "tokenizer")
    vocab, train_tokens = len(tokenizer), (meta.get("tokens") or {}).get("train")
    ckpt_dir = args.checkpoint_dir or args.out.with_name(args.out.name + "-checkpoints")
    ckpt = TrainingCheckpointer(ckpt_dir, every_s=args.checkpoint_every_s, every_steps=args.checkpoint_every_steps)
    plan_path = ckpt_dir / "plan.json"
    train_end = started + training_seconds(args.budget_s)
    plan = (json.loads(plan_path.read_text()) if plan_path.is_file()
            else make_plan(args, device, vocab, train_end - started, meta.get("max_params"), train_tokens))
    if args.max_steps and not plan_path.is_file():
        plan_path.write_text(json.dumps(plan))
    size = next(s for s in SIZES if s.name == plan["size"])
    seq_len, batch_size = plan["seq_len"], plan["batch_size"]
    micro_batch = plan.get("micro_batch_size", batch_size)
    accumulation = batch_size // micro_batch

    # -- model and optimizer, restored from the latest checkpoint ----------------------------------------------
    config = GPTConfig(vocab_size=vocab, seq_len=seq_len, n_layer=size.n_layer, n_head=size.n_head,
                       n_embd=size.n_embd)
    model = GPT(config, loss_chunk=loss_chunk_rows(args.loss_chunk, device, size, config) or None).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    log.info("model %s: %.2fM parameters (%.2fM non-embedding, vocabulary %d padded to %d), seq %d, batch %d "
             "(%d x %d), device %s", size.name, n_params / 1e6, size.params / 1e6, vocab, config.padded_vocab,
             seq_len, batch_size, accumulation, micro_batch, device)
    peak_lr = 6e-4 if size.n_embd >= 512 else 1e-3
    optimizer = build_optimizer(model, plan.get("optimizer", "adamw"), peak_lr)
    state = restore(ckpt, model, optimizer)
    step, trained_s = state["step"], state["trained_s"]
    step_fn = torch.compile(model) if device == "cuda" and not args.no_compile else model

    # -- data ---------------------------------------------------------------------------------------------------
    batches = PackedBatches(np.memmap(args.data / "train.bin", dtype=np.uint16, mode="r"), seq_len, micro_batch,
                            args.seed)
    data = device_batches(batches, step * accumulation, device)

    # -- training: one loop, until the schedule ends, the time is up or a signal asks to stop --------------------
    # This process takes at least one step, however small its budget, unless a signal came first.
    throughput = Throughput(device, step, state.get("timed_steps", 0), state.get("timed_s", 0.0))
    loss, step_loss = float("nan"), None
    while not ckpt.stop_requested and (time.monotonic() < train_end or step_loss is None):
        total = plan["total_steps"]
        if total is None and (rate := throughput.steps_per_s(step)):  # the schedule, once the speed is known
            total = fix_schedule(plan, plan_path, step + max(10, int(0.9 * rate * (train_end - time.monotonic()))),
                                 rate, batch_size * seq_len, train_tokens)
        if total is not None and step >= total:
            break
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, total or 1000, peak_lr, warmup=max(5, min(100, (total or 1000) // 20)))
        step_start = time.monotonic()
        step_loss = train_step(step_fn, model, optimizer, data, accumulation, device)
        step += 1
        trained_s += time.monotonic() - step_start
        throughput.after_step(step)
        if step % args.log_every == 0 or step == total:
            loss = step_loss.item()  # the only per-step wait on the GPU
            print(f"progress: {step}/{total or '?'} loss {loss:.4f}", flush=True)
        ckpt.maybe_save(model, optimizer, step=step, trained_s=trained_s, **throughput.totals(step))

    # -- the end: a last checkpoint, the validation loss, the model folder and a summary ------------------------
    _sync(device)
    loss = step_loss.item() if step_loss is not None else loss
    timed = throughput.totals(step)
    ckpt.save(model, optimizer, step=step, trained_s=trained_s, **timed)
    val_loss = validation_loss(model, args.data / "validation.bin", seq_len, micro_batch, device,
                               deadline=started + args.budget_s)
    export(model, tokenizer, args.out)
    step_tokens = batch_size * seq_len
    summary = {"size": size.name, "parameters": n_params, "steps": step, "tokens": step * step_tokens,
               "epochs": step * step_tokens / train_tokens if train_tokens else None,
               "train_loss": loss, "validation_loss": val_loss,
               "tokens_per_s": (timed["timed_steps"] * step_tokens / timed["timed_s"] if timed["timed_steps"]
                                else step * step_tokens / max(trained_s, 1e-9)),
               "timed_steps": timed["timed_steps"], "train_s": trained_s, "stopped_by_signal": ckpt.stop_requested}
    (args.out / "training_summary.json").write_text(json.dumps(summary, indent=2))
    print("summary: " + json.dumps(summary), flush=True)
    return 143 if ckpt.stop_requested else 0


def make_plan(args: argparse.Namespace, device: str, vocab: int, train_s: float, max_params: int | None,
              train_tokens: int | None) -> dict:
    """The run's plan, chosen once: the size from the measured speed (or --size), the batch and the optimizer;
    the number of steps is fixed later, from the measured step rate (or now, by --max-steps)."""
    seq_len = args.seq_len or (1024 if device == "cuda" else 128)
    batch_size = args.batch_size or (64 if device == "cuda" else 16)
    micro_batch = min(batch_size, args.micro_batch_size or (32 if device == "cuda" else batch_size))
    if batch_size % micro_batch:
        raise SystemExit(f"--batch-size {batch_size} is not a multiple of --micro-batch-size {micro_batch}")
    flops = measure_matmul_flops(device, torch.bfloat16 if device == "cuda" else torch.float32)
    model_flops = flops * MFU_GUESS[device]
    size = next(s for s in SIZES if s.name == args.size) if args.size else choose_size(
        model_flops, train_s, max_params, train_tokens, vocab, seq_len)
    tokens = planned_tokens(size, model_flops, train_s, vocab, seq_len)
    epochs = f" = {tokens / train_tokens:.2f} epochs of {_amount(train_tokens)}" if train_tokens else ""
    print(f"plan: {size.name} ({_amount(size.params)} non-embedding parameters), about {_amount(tokens)} "
          f"tokens in {train_s:.0f} s" + (epochs or " (corpus size unknown)"), flush=True)
    return {"size": size.name, "seq_len": seq_len, "batch_size": batch_size, "micro_batch_size": micro_batch,
            "optimizer": args.optimizer, "matmul_flops": flops, "total_steps": args.max_steps, "device": device}


def fix_schedule(plan: dict, plan_path: Path, total: int, rate: float, step_tokens: int,
                 train_tokens: int | None) -> int:
    """Fix the schedule's length (saved with the plan, so a resumed run keeps it)."""
    plan["total_steps"] = total
    plan_path.write_text(json.dumps(plan))
    tokens = total * step_tokens
    log.info("schedule: %d steps at %.2f steps/s, %s tokens%s", total, rate, _amount(tokens),
             f" = {tokens / train_tokens:.2f} epochs" if train_tokens else "")
    return total


def loss_chunk_rows(requested: int | None, device: str, size: Size, config: GPTConfig) -> int:
    """Rows per cross-entropy chunk (0: the plain loss). On a GPU torch.compile fuses the plain loss; on a CPU
    chunks stay in cache: rows measured best were 32-64 at width 64, 128 at 256-384."""
    if requested is not None:
        return requested
    return 0 if device == "cuda" else max(64, size.n_embd // 2) * max(1, 32768 // config.padded_vocab)


def restore(ckpt: TrainingCheckpointer, model: GPT, optimizer) -> dict:
    """The latest checkpoint's state (step, trained_s, timed steps and seconds), or a fresh start."""
    try:
        return ckpt.restore(model, optimizer) or {"step": 0, "trained_s": 0.0}
    except (RuntimeError, KeyError, ValueError) as err:  # a checkpoint of another model or recipe version
        why = " ".join(str(err).split())[:300]
        raise SystemExit(f"cannot resume from {ckpt.latest()}: it does not fit this model ({why}); "
                         f"start afresh with another --out or --checkpoint-dir") from err


def train_step(step_fn, model: GPT, optimizer, data: Iterator[torch.Tensor], accumulation: int,
               device: str) -> torch.Tensor:
    """One optimizer step over `accumulation` micro-batches; the mean loss stays on the device."""
    loss_sum = torch.zeros((), device=device)
    for _ in range(accumulation):
        batch = next(data)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss = step_fn(batch[:, :-1], batch[:, 1:])
        (loss / accumulation).backward()
        loss_sum += loss.detach()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)  # no host sync
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss_sum / accumulation


class Throughput:
    """Steps and seconds timed from the end of this process's warm-up steps (compilation, allocation) to now,
    logging and checkpoints included, added to those of earlier processes of the same run. The schedule's
    length and the summary's tokens_per_s come from it."""

    def __init__(self, device: str, first_step: int, steps_before: int, seconds_before: float) -> None:
        self.device, self.warm_until = device, first_step + WARMUP_STEPS[device]
        self.steps_before, self.seconds_before = steps_before, seconds_before
        self.start: tuple[int, float] | None = None  # (step, time) where this process's timed window began

    def after_step(self, step: int) -> None:
        if step == self.warm_until:
            _sync(self.device)
            self.start = (step, time.monotonic())

    def steps_per_s(self, step: int) -> float | None:
        """This process's step rate, once its window spans 10 steps and 2 s; None before."""
        if self.start is None or step - self.start[0] < 10 or time.monotonic() - self.start[1] < 2.0:
            return None
        _sync(self.device)
        return (step - self.start[0]) / (time.monotonic() - self.start[1])

    def totals(self, step: int) -> dict:
        if self.start is None:
            return {"timed_steps": self.steps_before, "timed_s": self.seconds_before}
        return {"timed_steps": self.steps_before + step - self.start[0],
                "timed_s": self.seconds_before + time.monotonic() - self.start[1]}


def build_optimizer(model: GPT, name: str, lr: float):
    """AdamW (weight decay on matrices and embeddings, not on norms), or Muon for the blocks' matrices."""
    matrices = [p for n, p in model.named_parameters() if p.dim() == 2 and n.startswith("h.")]
    embeddings = [p for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith("h.")]
    norms = [p for p in model.parameters() if p.dim() < 2]
    adamw = {"lr": lr, "betas": (0.9, 0.95), "fused": True}  # one kernel per step, on a CPU too (6x the foreach)
    if name == "adamw":
        return torch.optim.AdamW([{"params": matrices + embeddings, "weight_decay": 0.1},
                                  {"params": norms, "weight_decay": 0.0}], **adamw)
    if not hasattr(torch.optim, "Muon"):
        raise SystemExit(f"--optimizer muon needs torch.optim.Muon (torch 2.9 or later); this is {torch.__version__}")
    # match_rms_adamw scales Muon's update to AdamW's size, so both share one learning rate and schedule.
    return Optimizers(torch.optim.Muon(matrices, lr=lr, weight_decay=0.1, adjust_lr_fn="match_rms_adamw"),
                      torch.optim.AdamW([{"params": embeddings, "weight_decay": 0.1},
                                         {"params": norms, "weight_decay": 0.0}], **adamw))


class Optimizers:
    """Several optimizers stepped as one, with one state dict, so the checkpointer saves them together."""

    def __init__(self, *optimizers: torch.optim.Optimizer) -> None:
        self.optimizers = optimizers

    @property
    def param_groups(self) -> list[dict]:
        return [group for optimizer in self.optimizers for group in optimizer.param_groups]

    def step(self) -> None:
        for optimizer in self.optimizers:
            optimizer.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return {str(i): optimizer.state_dict() for i, optimizer in enumerate(self.optimizers)}

    def load_state_dict(self, state: dict) -> None:
        for i, optimizer in enumerate(self.optimizers):
            optimizer.load_state_dict(state[str(i)])


@torch.no_grad()
def validation_loss(model: GPT, path: Path, seq_len: int, batch_size: int, device: str, deadline: float,
                    max_batches: int = 20) -> float | None:
    """Mean loss on up to max_batches batches of the validation split, fewer when 10 s before the deadline;
    a split shorter than one batch is read as fewer or shorter sequences. None when there is no split, no
    time or fewer than two tokens."""
    if not path.is_file() or time.monotonic() > deadline - 10:
        return None
    tokens = np.memmap(path, dtype=np.uint16, mode="r") if path.stat().st_size else np.zeros(0, np.uint16)
    if len(tokens) < 2:
        return None
    seq_len = min(seq_len, len(tokens) - 1)
    batches = PackedBatches(tokens, seq_len, min(batch_size, (len(tokens) - 1) // seq_len), seed=0)
    model.eval()
    losses = []
    for index in range(min(max_batches, batches.windows // batches.batch_size)):
        if losses and time.monotonic() > deadline - 10:  # leave the time to write the model folder
            break
        batch = batches.batch(index).to(device)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            losses.append(model(batch[:, :-1], batch[:, 1:]).item())
    model.train()
    return float(np.mean(losses))


def export(model: GPT, tokenizer, out: Path) -> None:
    """Write the model as a transformers GPT-2 folder under a temporary name, then swap it in: a reader never
    sees half of it."""
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.to_hf(eos_id=tokenizer.eos_token_id).save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def _amount(n: float) -> str:
    return next((f"{n / scale:.3g}{unit}" for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)) if n >= scale),
                f"{n:.0f}")


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    sys.exit(main())
