"""Imported at every Python start-up when this folder is on PYTHONPATH (see challenges.framework.gpu_memory).

It caps PyTorch's CUDA memory at RESEARCH_CREW_GPU_MEMORY_GB per device, registered to run when torch
initialises CUDA, so processes that never use a GPU pay nothing (torch is not imported here).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys

VARIABLE = "RESEARCH_CREW_GPU_MEMORY_GB"
GIB = 1 << 30


def apply_cap(torch, limit_gb: float) -> list[tuple[int, float]]:
    """Set the memory fraction on every visible device; return (device, fraction) for those capped."""
    capped = []
    for device in range(torch.cuda.device_count()):
        total = torch.cuda.get_device_properties(device).total_memory
        if limit_gb * GIB < total:
            fraction = limit_gb * GIB / total
            torch.cuda.set_per_process_memory_fraction(fraction, device)
            capped.append((device, fraction))
    return capped


class _AfterTorchCuda(importlib.abc.MetaPathFinder):
    """When `torch.cuda` is imported, queue the cap for CUDA's lazy initialisation (torch.cuda._lazy_call)."""

    def __init__(self, limit_gb: float) -> None:
        self.limit_gb = limit_gb

    def find_spec(self, name, path, target=None):
        if name != "torch.cuda":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        load = spec.loader.exec_module
        limit_gb = self.limit_gb

        def exec_module(module):
            load(module)
            module._lazy_call(lambda: apply_cap(sys.modules["torch"], limit_gb))

        spec.loader.exec_module = exec_module
        return spec


def install() -> bool:
    """Register the cap if the variable asks for one; True when registered."""
    value = os.environ.get(VARIABLE, "").strip()
    if not value or any(isinstance(f, _AfterTorchCuda) for f in sys.meta_path):
        return False
    try:
        limit_gb = float(value)
    except ValueError:
        return False
    sys.meta_path.insert(0, _AfterTorchCuda(limit_gb))
    return True


if __name__ == "sitecustomize":
    install()
