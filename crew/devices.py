"""What accelerators this machine offers to training and scoring."""

from __future__ import annotations


def gpu_count() -> int:
    """CUDA GPUs that torch can train on (a CPU-only torch on a GPU box counts as none)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def compute_device() -> str:
    return "cuda" if gpu_count() else "cpu"
