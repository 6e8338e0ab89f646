"""Jobs see at most the preset's GPU memory, so an 80 GB card behaves like the 40 GB reference machine.

How: `job_environment` adds this package's folder to PYTHONPATH and the limit to RESEARCH_CREW_GPU_MEMORY_GB.
Every Python process started with that environment (the baseline recipe, the agents' commands and jobs,
the scorer) imports `sitecustomize` from here at start-up, which registers a call for the moment torch
initialises CUDA: `torch.cuda.set_per_process_memory_fraction(limit / card memory)` on every visible device.
PyTorch's allocator then raises its usual out-of-memory error past the limit, exactly as on the smaller
card. Nothing is imported or initialised in processes that never touch CUDA.

Why not PYTORCH_CUDA_ALLOC_CONF: it has no setting for a memory ceiling. The fraction covers what PyTorch's
caching allocator hands out (tensors and their cache), not the CUDA context itself (a few hundred MB, present
on the reference card too) nor memory that non-PyTorch libraries allocate directly.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

VARIABLE = "RESEARCH_CREW_GPU_MEMORY_GB"
HOOK_DIR = Path(__file__).resolve().parent
GIB = 1 << 30


def job_environment(limit_gb: float, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables to add to a job's environment so it sees at most `limit_gb` GiB per GPU."""
    environ = os.environ if environ is None else environ
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(HOOK_DIR)]
    return {VARIABLE: f"{limit_gb:g}", "PYTHONPATH": os.pathsep.join([str(HOOK_DIR), *paths])}


def memory_fraction(limit_bytes: float, total_bytes: float) -> float | None:
    """The share of a card that leaves `limit_bytes` usable; None when the card is no larger than that."""
    if total_bytes <= 0 or limit_bytes <= 0 or limit_bytes >= total_bytes:
        return None
    return limit_bytes / total_bytes
