"""GPU status through NVML: utilisation, memory, temperature, and which of our jobs run on each GPU."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

_MIB = 1024 * 1024


def gpu_status(job_pids: Mapping[int, str] | None = None) -> str:
    """One line per GPU (plus its processes); a plain 'no GPU' when there is none or NVML is missing."""
    try:
        import pynvml
    except ImportError:
        return "no GPU: nvidia-ml-py is not installed, so GPUs cannot be queried."
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return f"no GPU: NVML is not available here ({err})."
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            return "no GPU: NVML found no devices."
        return "\n".join(_describe(pynvml, i, job_pids or {}) for i in range(count))
    except pynvml.NVMLError as err:
        return f"GPU query failed: {err}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _describe(nv: Any, index: int, job_pids: Mapping[int, str]) -> str:
    handle = nv.nvmlDeviceGetHandleByIndex(index)
    name = nv.nvmlDeviceGetName(handle)
    name = name.decode() if isinstance(name, bytes) else name
    util = nv.nvmlDeviceGetUtilizationRates(handle)
    mem = nv.nvmlDeviceGetMemoryInfo(handle)
    try:
        temp = f"{nv.nvmlDeviceGetTemperature(handle, nv.NVML_TEMPERATURE_GPU)}°C"
    except nv.NVMLError:
        temp = "temperature n/a"
    line = f"GPU {index} {name}: {util.gpu}% util · {mem.used // _MIB:,}/{mem.total // _MIB:,} MiB · {temp}"
    try:
        procs = nv.nvmlDeviceGetComputeRunningProcesses(handle)
    except nv.NVMLError:
        procs = []
    if not procs:
        return line + "\n   no processes"
    rows = []
    for p in procs:
        used = p.usedGpuMemory
        memory = f"{used // _MIB:,} MiB" if isinstance(used, int) else "memory n/a"
        owner = f"our job {job_pids[p.pid]}" if p.pid in job_pids else "not ours"
        rows.append(f"   pid {p.pid}: {memory} ({owner})")
    return line + "\n" + "\n".join(rows)
