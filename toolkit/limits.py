"""Resource limits for one sandboxed command or job: a process limit and an address-space limit.

Processes: a `pids` cgroup of its own per command (cgroup v2 where the machine delegates the pids controller,
or the v1 pids hierarchy), whose pids.max counts every process and thread the command starts, root's too.
RLIMIT_NPROC is no substitute: the kernel never applies it to uid 0, and counts per user, not per command.
Memory: RLIMIT_AS through `prlimit` (applies to root), left off where GPUs are in use (CUDA maps far more
address space than memory). `describe()` says which apply here, for `doctor`.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
STALE_S = 60.0
_counter = itertools.count()


def _own_cgroup(hierarchy: str) -> str | None:
    """This process's cgroup path in a v1 hierarchy ("pids") or in v2 (""), from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        wanted = hierarchy in controllers.split(",") if hierarchy else (number == "0" and not controllers)
        if wanted:
            return path
    return None


def pids_parent(tag: str) -> Path | None:
    """A folder where per-command pids cgroups can be made (made here), or None where none can."""
    candidates = []
    v2 = _own_cgroup("")
    if v2 is not None and (CGROUP_ROOT / "cgroup.controllers").is_file():
        candidates.append(CGROUP_ROOT / v2.lstrip("/"))
    v1 = _own_cgroup("pids")
    if v1 is not None and (CGROUP_ROOT / "pids").is_dir():
        candidates.append(CGROUP_ROOT / "pids" / v1.lstrip("/"))
    for base in candidates:
        _sweep(base)
        parent = base / f"research-crew-{tag}"
        try:
            parent.mkdir(exist_ok=True)
            probe = parent / "probe"
            probe.mkdir(exist_ok=True)
            usable = (probe / "pids.max").is_file()
            probe.rmdir()
        except OSError:
            continue
        if usable:
            atexit.register(release, parent)  # what is empty by then; a job still running keeps its own
            return parent
        try:
            parent.rmdir()
        except OSError:
            pass
    return None


def _sweep(base: Path) -> None:
    """Remove what earlier runs left: their commands' empty groups (a minute old) and then their empty parents.
    A group in use holds processes and cannot be removed; a parent removed under a live run is made again."""
    try:
        parents = [p for p in base.glob("research-crew-*") if p.is_dir()]
    except OSError:
        return
    for parent in parents:
        _remove_stale(parent)
        try:
            parent.rmdir()
        except OSError:
            pass


def _remove_stale(parent: Path) -> None:
    now = time.time()
    for old in parent.iterdir():
        if old.is_dir() and now - old.stat().st_mtime > STALE_S:
            try:
                old.rmdir()  # refused while processes remain in it
            except OSError:
                pass


def new_pids_group(parent: Path, max_processes: int) -> Path:
    """A fresh cgroup under `parent` with pids.max set. Empty ones left by earlier commands are removed once a
    minute old: a job's group stays empty until its runner, started later, moves into it."""
    parent.mkdir(exist_ok=True)
    _remove_stale(parent)
    group = parent / f"{os.getpid()}-{next(_counter)}"
    group.mkdir()
    (group / "pids.max").write_text(str(max_processes))
    return group


def release(parent: Path | None) -> None:
    """Remove the per-command cgroups (and their parent) once empty."""
    if parent is None or not parent.is_dir():
        return
    for group in parent.iterdir():
        try:
            group.rmdir()
        except OSError:
            pass
    try:
        parent.rmdir()
    except OSError:
        pass


def address_space_prefix(max_memory_bytes: int | None) -> str:
    if max_memory_bytes is None or shutil.which("prlimit") is None:
        return ""
    return f"prlimit --as={max_memory_bytes}:{max_memory_bytes} "


def describe(max_processes: int | None, max_memory_bytes: int | None, tag: str = "doctor") -> list[str]:
    """Which limits apply on this machine, in words: which mechanism, and whether it binds root."""
    lines = []
    parent = pids_parent(tag)
    if max_processes is None:
        lines.append("processes: no limit set")
    elif parent is not None:
        kind = "cgroup v1 pids hierarchy" if CGROUP_ROOT / "pids" in parent.parents else "cgroup v2, pids delegated"
        lines.append(f"processes: at most {max_processes} per command or job, root's included (a pids cgroup of "
                     f"its own: {kind}, under {parent.parent})")
        release(parent)
    else:
        lines.append("processes: NOT limited (no pids cgroup can be made here: cgroup v2 without the pids "
                     "controller delegated to this user, and no writable v1 pids hierarchy; RLIMIT_NPROC is not "
                     "used instead, as the kernel never applies it to root and it counts per user, not per command)")
    if max_memory_bytes is None:
        lines.append("memory: no address-space limit (runs with GPUs, or none set)")
    elif shutil.which("prlimit"):
        lines.append(f"memory: address space at most {max_memory_bytes / 2**30:.1f} GiB per process of a command "
                     "or job, root's included (RLIMIT_AS through prlimit)")
    else:
        lines.append("memory: NOT limited (prlimit, from util-linux, is missing)")
    return lines
