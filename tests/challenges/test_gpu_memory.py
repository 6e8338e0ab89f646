"""Jobs see at most the preset's GPU memory: the start-up hook every Python job imports, checked on the CPU.

No GPU here: the hook's registration with torch is checked in a real Python process (it queues its call for
CUDA's initialisation), and the cap itself on a stand-in for torch.cuda that records what it is told, with
the memory of an 80 GB card.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from challenges.framework import gpu_memory
from challenges.framework.gpu_memory import sitecustomize

GIB = 1 << 30


class _Cuda:
    """torch.cuda as an 80 GB card shows it; records the fractions set."""

    def __init__(self, cards: list[int]) -> None:
        self.cards, self.fractions = cards, {}

    def device_count(self) -> int:
        return len(self.cards)

    def get_device_properties(self, device: int):
        return type("Properties", (), {"total_memory": self.cards[device]})()

    def set_per_process_memory_fraction(self, fraction: float, device: int) -> None:
        assert 0 < fraction <= 1, fraction  # torch refuses anything else
        self.fractions[device] = fraction


def test_an_80_gb_card_is_capped_at_the_presets_40():
    cuda = _Cuda([80 * GIB, 80 * GIB])
    capped = sitecustomize.apply_cap(type("Torch", (), {"cuda": cuda})(), 40)
    assert capped == [(0, 0.5), (1, 0.5)] and cuda.fractions == {0: 0.5, 1: 0.5}


def test_a_card_no_larger_than_the_preset_is_left_alone():
    cuda = _Cuda([40 * GIB])
    assert sitecustomize.apply_cap(type("Torch", (), {"cuda": cuda})(), 40) == [] and cuda.fractions == {}
    assert gpu_memory.memory_fraction(40 * GIB, 80 * GIB) == 0.5 and gpu_memory.memory_fraction(80, 40) is None


def test_a_job_started_with_the_environment_registers_the_cap_when_torch_loads(tmp_path):
    env = {**os.environ, **gpu_memory.job_environment(40, {"PYTHONPATH": "/somewhere"})}
    assert env["PYTHONPATH"].split(os.pathsep) == [str(gpu_memory.HOOK_DIR), "/somewhere"]
    code = ("import sys, torch\n"
            "print([type(f).__name__ for f in sys.meta_path].count('_AfterTorchCuda'))\n"
            "print(sum('_AfterTorchCuda' in c[0].__qualname__ for c in torch.cuda._queued_calls))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path).stdout.split()
    assert out == ["1", "1"]  # installed once, and queued for CUDA's lazy initialisation


def test_without_the_variable_nothing_is_installed(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(gpu_memory.HOOK_DIR)}
    env.pop(gpu_memory.VARIABLE, None)
    code = "import sys; print(any(type(f).__name__ == '_AfterTorchCuda' for f in sys.meta_path))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                         cwd=tmp_path).stdout.strip()
    assert out == "False"


@pytest.mark.gpu
def test_on_a_gpu_an_allocation_past_the_preset_fails(tmp_path):
    env = {**os.environ, **gpu_memory.job_environment(1)}  # a 1 GiB "card"
    code = ("import torch\n"
            "torch.empty(512 << 20, dtype=torch.uint8, device='cuda')\n"
            "try:\n    torch.empty(2 << 30, dtype=torch.uint8, device='cuda')\nexcept torch.OutOfMemoryError:\n"
            "    print('capped')\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "capped", out.stderr[-2000:]


HOOKED = "import sys; print('HOOKED', any(type(f).__name__ == '_AfterTorchCuda' for f in sys.meta_path))"


def test_agents_commands_and_jobs_in_the_sandbox_get_the_cap_too(tmp_path, monkeypatch):
    """The runner sets the cap in its own environment; the sandbox drops both of its variables (PYTHONPATH
    points outside, RESEARCH_CREW_* is the crew's), so the crew hands them in as what the preset declares."""
    import time

    from challenges.framework.spec import Preset
    from crew.run.config import RunConfig
    from crew.run.sandboxing import agent_sandbox, declared_env
    from toolkit import Toolkit
    from toolkit.sandbox import bwrap_problem

    if bwrap_problem():
        pytest.skip(f"needs a working bubblewrap: {bwrap_problem()}")
    for name, value in gpu_memory.job_environment(40).items():  # as crew/policy/runner.py does on a GPU
        monkeypatch.setenv(name, value)
    run_toml = tmp_path / "run" / "run.toml"
    run_toml.parent.mkdir()
    RunConfig(run_id="r", challenge="toy", challenge_dir=str(tmp_path / "toy"), preset="full", model="m",
              supervisor_model="m", worker_model="m", budget_s=60.0, started_at=time.time(), device="cuda",
              data_dir=str(tmp_path / "data"), agent_network="off").save(run_toml)
    preset = Preset(name="full", hours=1.0, gpus=1, gpu_memory_gb=40, env=(("SEEN", "yes"),))
    tk = Toolkit(run_toml.parent, sandbox=agent_sandbox(run_toml, preset, gpus=True), env=declared_env(preset))
    seen = tk.run_bash(f'python -c "{HOOKED}"; echo "$SEEN ${gpu_memory.VARIABLE}"', timeout_s=60).output
    assert "HOOKED True" in seen and "yes 40" in seen, seen
    job = tk.start_job(f'python -c "{HOOKED}"', "hooked").record.id
    for _ in range(600):
        if not tk.job_status(job).running:
            break
        time.sleep(0.05)
    assert "HOOKED True" in tk.tail_job(job, 5)
