"""Save and resume any PyTorch training loop: periodically, and when the process is asked to stop.

    from checkpoints.training import TrainingCheckpointer
    ckpt = TrainingCheckpointer("ckpt", every_s=600)
    state = ckpt.restore(model, optimizer, scheduler) or {"step": 0}
    for step in range(state["step"], total_steps):
        train_one_step(step)
        ckpt.maybe_save(model, optimizer, scheduler, step=step + 1)
        if ckpt.stop_requested:   # SIGTERM or SIGUSR1 arrived: a checkpoint was just saved
            break

Each checkpoint is a folder written in full under a temporary name and then renamed, so a kill at any
instant leaves the previous checkpoint intact. The last `keep` checkpoints are kept. Model, optimizer
and scheduler state, the RNG states (Python, NumPy, torch CPU and CUDA) and any JSON-able extras (step,
data position) are saved. Pass the unwrapped model (not a torch.compile or DDP wrapper).
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from checkpoints.atomic import fsync_path

log = logging.getLogger(__name__)
PREFIX = "step-"


class TrainingCheckpointer:
    def __init__(self, directory: str | Path, every_s: float = 600.0, keep: int = 2,
                 signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGUSR1), every_steps: int | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.every_s = every_s
        self.every_steps = every_steps
        self.keep = max(1, keep)
        self.stop_requested = False
        self._signal_pending = False
        self._last_save = time.monotonic()
        for sig in signals:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        # Only set flags here: saving inside a signal handler could interrupt a half-done optimizer step.
        log.warning("received %s: will checkpoint after this step", signal.Signals(signum).name)
        self._signal_pending = True
        if signum == signal.SIGTERM:
            self.stop_requested = True

    def latest(self) -> Path | None:
        done = sorted(p for p in self.directory.glob(f"{PREFIX}*") if (p / "state.json").is_file())
        return done[-1] if done else None

    def restore(self, model: torch.nn.Module, optimizer: Any = None, scheduler: Any = None,
                map_location: str | torch.device = "cpu") -> dict[str, Any] | None:
        """Load the latest checkpoint into the given objects; return its extras, or None if there is none."""
        path = self.latest()
        if path is None:
            return None
        model.load_state_dict(torch.load(path / "model.pt", map_location=map_location))
        if optimizer is not None and (path / "optimizer.pt").is_file():
            optimizer.load_state_dict(torch.load(path / "optimizer.pt", map_location=map_location))
        if scheduler is not None and (path / "scheduler.pt").is_file():
            scheduler.load_state_dict(torch.load(path / "scheduler.pt"))
        _set_rng_state(torch.load(path / "rng.pt", weights_only=False))
        extras = json.loads((path / "state.json").read_text())
        log.info("resumed from %s", path)
        return extras

    def maybe_save(self, model: torch.nn.Module, optimizer: Any = None, scheduler: Any = None,
                   *, step: int, **extras: Any) -> bool:
        """Save if the interval (in seconds, or in steps when every_steps is set) has passed or a signal
        asked for it; return whether it saved."""
        due = time.monotonic() - self._last_save >= self.every_s or bool(
            self.every_steps and step % self.every_steps == 0)
        if not (due or self._signal_pending):
            return False
        self.save(model, optimizer, scheduler, step=step, **extras)
        return True

    def save(self, model: torch.nn.Module, optimizer: Any = None, scheduler: Any = None,
             *, step: int, **extras: Any) -> Path:
        final = self.directory / f"{PREFIX}{step:09d}"
        staging = self.directory / f".tmp-{PREFIX}{step:09d}-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        torch.save(model.state_dict(), staging / "model.pt")
        if optimizer is not None:
            torch.save(optimizer.state_dict(), staging / "optimizer.pt")
        if scheduler is not None:
            torch.save(scheduler.state_dict(), staging / "scheduler.pt")
        torch.save(_rng_state(), staging / "rng.pt")
        (staging / "state.json").write_text(json.dumps({"step": step, **extras}))
        for file in staging.iterdir():
            fsync_path(file)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(staging, final)
        fsync_path(self.directory)
        self._prune()
        self._last_save = time.monotonic()
        self._signal_pending = False
        log.info("checkpoint saved: %s", final)
        return final

    def _prune(self) -> None:
        done = sorted(p for p in self.directory.glob(f"{PREFIX}*") if (p / "state.json").is_file())
        for old in done[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)


def _rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
