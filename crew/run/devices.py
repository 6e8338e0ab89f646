"""What accelerators this machine offers to training and scoring."""

from __future__ import annotations

import os
from pathlib import Path

GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd")  # NVIDIA's driver, and AMD's (ROCm builds of torch use cuda too)


def gpu_count() -> int:
    """CUDA GPUs that torch can train on (a CPU-only torch on a GPU box counts as none)."""
    if not any(Path(node).exists() for node in GPU_DEVICE_NODES):
        return 0  # no driver: no need to import torch (seconds) to learn it
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def visible_devices() -> list[str]:
    """The GPU ids jobs may be given, as CUDA_VISIBLE_DEVICES names them: the parent's own list when it has
    one (a bench cell given GPU 3 hands out "3", never "0"), else 0..n-1."""
    count = gpu_count()
    named = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return named[:count] if named else [str(i) for i in range(count)]
