"""checkpoints.training: exact resume of a PyTorch loop, pruning, signals; and the MiniPile recipe resuming."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge
from checkpoints.training import TrainingCheckpointer


def make_loop(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    def step() -> float:
        x = torch.randn(4, 8)  # drawn from the global RNG, which the checkpoint must restore
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()
        return loss.item()

    return model, optimizer, scheduler, step


def test_resume_continues_exactly(tmp_path):
    model, optimizer, scheduler, step = make_loop()
    ckpt = TrainingCheckpointer(tmp_path, every_s=1e9)
    for _ in range(3):
        step()
    ckpt.save(model, optimizer, scheduler, step=3, data_position=12)
    expected = [step() for _ in range(3)]

    model2, optimizer2, scheduler2, step2 = make_loop(seed=99)  # different init, all restored
    extras = TrainingCheckpointer(tmp_path).restore(model2, optimizer2, scheduler2)
    assert extras == {"step": 3, "data_position": 12}
    assert [step2() for _ in range(3)] == pytest.approx(expected, rel=1e-6)


def test_keeps_only_the_last_k_and_ignores_unfinished(tmp_path):
    model, optimizer, _, _ = make_loop()
    ckpt = TrainingCheckpointer(tmp_path, keep=2)
    for number in (1, 2, 3):
        ckpt.save(model, optimizer, step=number)
    (tmp_path / ".tmp-step-000000004-1").mkdir()  # a save killed half way
    assert sorted(p.name for p in tmp_path.glob("step-*")) == ["step-000000002", "step-000000003"]
    assert ckpt.latest().name == "step-000000003"


def test_signals_trigger_a_save_and_sigterm_asks_to_stop(tmp_path):
    model, optimizer, _, _ = make_loop()
    ckpt = TrainingCheckpointer(tmp_path, every_s=1e9)
    assert not ckpt.maybe_save(model, optimizer, step=1)
    os.kill(os.getpid(), signal.SIGUSR1)
    assert ckpt.maybe_save(model, optimizer, step=2) and not ckpt.stop_requested
    os.kill(os.getpid(), signal.SIGTERM)
    assert ckpt.stop_requested and ckpt.maybe_save(model, optimizer, step=3)
    assert ckpt.latest().name == "step-000000003"


def test_minipile_recipe_saves_on_sigterm_and_resumes(tmp_path):
    data = prepare_data(load_challenge("minipile"), "smoke")
    recipe = load_challenge("minipile").directory / "baseline" / "train.py"
    out = tmp_path / "model"
    argv = [sys.executable, str(recipe), "--data", str(data.data_dir), "--out", str(out), "--budget-s", "120"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    for line in first.stdout:
        if line.startswith("progress: 20/"):
            first.send_signal(signal.SIGTERM)
            break
    output = line + first.stdout.read()
    assert first.wait(timeout=60) == 143
    stopped_at = json.loads((out / "training_summary.json").read_text())
    assert stopped_at["stopped_by_signal"] and stopped_at["steps"] >= 20
    assert (out / "config.json").is_file(), output

    started = time.monotonic()
    second = subprocess.run(argv[:-1] + ["30"], capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stdout[-2000:]
    assert "resumed from" in second.stdout
    finished = json.loads((out / "training_summary.json").read_text())
    assert finished["steps"] > stopped_at["steps"] and not finished["stopped_by_signal"]
    assert time.monotonic() - started < 60


def losses(output: str) -> dict[int, float]:
    curve = {}
    for line in output.splitlines():
        if line.startswith("progress: "):
            step, _, loss = line.split()[1].split("/")[0], line.split()[2], line.split()[3]
            curve[int(step)] = float(loss)
    return curve


def test_a_job_killed_with_sigkill_resumes_with_the_same_steps_and_loss_curve(tmp_path):
    data = prepare_data(load_challenge("minipile"), "smoke")
    recipe = load_challenge("minipile").directory / "baseline" / "train.py"

    def argv(out):
        return [sys.executable, str(recipe), "--data", str(data.data_dir), "--out", str(out), "--budget-s", "600",
                "--size", "2L-64d", "--max-steps", "40", "--checkpoint-every-steps", "5", "--log-every", "1"]

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    reference = subprocess.run(argv(tmp_path / "ref"), capture_output=True, text=True, env=env, timeout=300)
    expected = losses(reference.stdout)
    assert sorted(expected) == list(range(1, 41))

    killed = subprocess.Popen(argv(tmp_path / "run"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env)
    seen = ""
    for line in killed.stdout:
        seen += line
        if line.startswith("progress: 23/"):
            killed.send_signal(signal.SIGKILL)  # no handler runs: the last checkpoint is step 20
            break
    killed.wait()
    resumed = subprocess.run(argv(tmp_path / "run"), capture_output=True, text=True, env=env, timeout=300)
    assert "resumed from" in resumed.stdout and "step-000000020" in resumed.stdout
    after = losses(resumed.stdout)
    assert sorted(after) == list(range(21, 41))  # steps 21-23 are redone, none skipped
    for step, loss in after.items():
        assert loss == pytest.approx(expected[step], abs=1e-4), step
    summary = json.loads((tmp_path / "run" / "training_summary.json").read_text())
    assert summary["steps"] == 40
