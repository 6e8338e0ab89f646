"""A time-bounded fine-tuning loop for baseline recipes, resumable through checkpoints.training.

The recipe gives the trainable parameters and a function from step index to a loss; the loop runs
AdamW with warmup and cosine decay until its deadline (or SIGTERM), saving checkpoints periodically and at
the end, and resumes from the latest checkpoint when run again with the same checkpoint folder.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from checkpoints.training import TrainingCheckpointer

log = logging.getLogger(__name__)


@dataclass
class TrainResult:
    steps: int
    loss: float
    stopped_by_signal: bool


def trainable_state(named: Iterable[tuple[str, torch.nn.Parameter]]) -> torch.nn.Module:
    """A module holding only the trainable parameters (e.g. LoRA's), so checkpoints stay small.

    It shares the tensors, so restoring it restores them in the model.
    """
    return torch.nn.ParameterDict({name.replace(".", "__"): p for name, p in named if p.requires_grad})


def cosine_lr(progress: float, peak: float, warmup: float = 0.05) -> float:
    """Linear warmup over the first `warmup` share of the time, then cosine decay to a tenth of the peak."""
    if progress < warmup:
        return peak * max(progress, 0.01 * warmup) / warmup
    rest = min(1.0, (progress - warmup) / (1 - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * rest)))


def train_until(loss_at: Callable[[int], torch.Tensor], state: torch.nn.Module, checkpoint_dir: Path,
                deadline: float, peak_lr: float, every_s: float = 300.0) -> TrainResult:
    """Step until `deadline` (a time.monotonic() value) or a stop signal; checkpoint `state` and the optimizer.
    At least one step is taken even when the deadline has passed (a small budget on a busy machine), so every
    run trains and a resume always moves on."""
    params = [p for p in state.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=peak_lr, weight_decay=0.0)
    ckpt = TrainingCheckpointer(checkpoint_dir, every_s=every_s)
    step = (ckpt.restore(state, optimizer) or {"step": 0})["step"]
    loss, started, first = float("nan"), time.monotonic(), step
    while not ckpt.stop_requested and (time.monotonic() < deadline or step == first):
        for group in optimizer.param_groups:
            # The schedule follows the time left, since the step count a budget allows is unknown beforehand.
            group["lr"] = cosine_lr((time.monotonic() - started) / max(1e-9, deadline - started), peak_lr)
        value = loss_at(step)
        value.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step, loss = step + 1, value.item()
        if step % 10 == 0:
            log.info("progress: %d steps, loss %.4f", step, loss)
        ckpt.maybe_save(state, optimizer, step=step)
    ckpt.save(state, optimizer, step=step)
    log.info("trained %d steps, last loss %.4f", step, loss)
    return TrainResult(step, loss, ckpt.stop_requested)
