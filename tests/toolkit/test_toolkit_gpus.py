"""GPU status: a plain answer without a GPU; the formatting path with a stand-in NVML module."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

from toolkit import Toolkit
from toolkit.gpus import gpu_status


class _NVMLError(Exception):
    pass


def _fake_nvml(devices: list[dict], *, init_error: str | None = None) -> types.ModuleType:
    nv = types.ModuleType("pynvml")
    nv.NVMLError = _NVMLError
    nv.NVML_TEMPERATURE_GPU = 0
    calls: list[str] = []
    nv.calls = calls

    def init() -> None:
        calls.append("init")
        if init_error:
            raise _NVMLError(init_error)

    nv.nvmlInit = init
    nv.nvmlShutdown = lambda: calls.append("shutdown")
    nv.nvmlDeviceGetCount = lambda: len(devices)
    nv.nvmlDeviceGetHandleByIndex = lambda i: devices[i]
    nv.nvmlDeviceGetName = lambda d: d["name"]
    nv.nvmlDeviceGetUtilizationRates = lambda d: types.SimpleNamespace(gpu=d["util"], memory=0)
    nv.nvmlDeviceGetMemoryInfo = lambda d: types.SimpleNamespace(used=d["used"], total=d["total"], free=0)
    nv.nvmlDeviceGetTemperature = lambda d, _kind: d["temp"]
    nv.nvmlDeviceGetComputeRunningProcesses = lambda d: [
        types.SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in d["procs"]
    ]
    return nv


def test_without_a_gpu_the_answer_is_plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([], init_error="NVML Shared Library Not Found"))
    assert Toolkit(tmp_path / "run").gpu_status().startswith("no GPU")
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([]))
    assert gpu_status() == "no GPU: NVML found no devices."


def test_real_nvml_never_raises(tmp_path: Path) -> None:
    answer = Toolkit(tmp_path / "run").gpu_status()
    assert answer.startswith(("no GPU", "GPU 0"))


def test_formatting_marks_our_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    mib = 1024 * 1024
    nv = _fake_nvml(
        [
            {
                "name": b"NVIDIA H100 80GB HBM3",
                "util": 97,
                "used": 40_000 * mib,
                "total": 81_559 * mib,
                "temp": 64,
                "procs": [(4242, 39_000 * mib), (777, None)],
            },
            {
                "name": "NVIDIA H100 80GB HBM3",
                "util": 0,
                "used": 1 * mib,
                "total": 81_559 * mib,
                "temp": 31,
                "procs": [],
            },
        ]
    )
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    text = gpu_status({4242: "001-train"})
    assert "GPU 0 NVIDIA H100 80GB HBM3: 97% util · 40,000/81,559 MiB · 64°C" in text
    assert "pid 4242: 39,000 MiB (our job 001-train)" in text
    assert "pid 777: memory n/a (not ours)" in text
    assert "GPU 1 NVIDIA H100 80GB HBM3: 0% util" in text and "no processes" in text
    assert nv.calls == ["init", "shutdown"]


@pytest.mark.gpu
def test_gpu_status_sees_a_job_using_the_gpu(tmp_path: Path, sandbox) -> None:
    torch = pytest.importorskip("torch")
    assert torch.cuda.is_available()
    tk = Toolkit(tmp_path / "run", job_grace_s=5, sandbox=sandbox)
    job = tk.start_job(
        f'{sys.executable} -c \'import torch,time; x=torch.ones(1024,1024,64,device="cuda"); '
        'print("ready", flush=True); time.sleep(120)\'',
        "gpu-hold",
    )
    try:
        deadline = time.monotonic() + 90
        while "ready" not in tk.tail_job(job.record.id, 5) and time.monotonic() < deadline:
            time.sleep(0.5)
        text = tk.gpu_status()
        assert text.startswith("GPU 0") and f"our job {job.record.id}" in text, text
    finally:
        tk.stop_job(job.record.id)
