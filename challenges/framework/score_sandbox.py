"""The scorer's own bubblewrap sandbox: what scoring sees, and nothing else.

A scorer reads an artifact an agent made, so it runs as if that artifact were hostile: no capabilities, its
own pid namespace, no network, `python -I` (no PYTHON* variables, no user site, no cwd on sys.path), an
environment built from an allowlist (no keys, no crew settings), and a file system made of the system and
the crew's Python read-only, the `challenges` and `checkpoints` packages read-only, the challenge's folder,
prepared data and private data read-only, the frozen artifact read-only, and two fresh folders of its own:
a scratch (its HOME and TMPDIR) and the folder its result file goes to. The run's state, the workspace, the
other evaluations, the project's other packages and the home directory do not exist inside.

It lives in challenges/ because the harness may import only `checkpoints` (DESIGN.md): the agents' sandbox
(toolkit/sandbox.py) shows an agent a different world and is not reused here.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import challenges
import checkpoints
from checkpoints.host_system import ETC_SECRETS, gpu_devices, system_binds

SYSTEM_DIRS = ("/usr", "/etc", "/opt")
# What a scorer's process may inherit: the search path, the locale, thread and GPU settings, the hub's offline
# flags. Never keys, proxies, crew settings or paths into the crew's folders.
ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS",
               "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
               "NVIDIA_VISIBLE_DEVICES", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
ENV_ALLOWED_PREFIXES = ("LC_", "NCCL_")
# Tools a scorer runs whose install lives outside the system folders: the Lean project, elan's toolchains and
# the programs on PATH by these names (their install folder is shown read-only).
EXTRA_READ_ONLY_VARIABLES = ("RESEARCH_CREW_LEAN_PROJECT", "ELAN_HOME")
# The folder `run --install-requirements` installed a challenge's [environment] requirements into: shown
# read-only and first on the scorer's search path (and its children's PYTHONPATH), as for the recipe and jobs.
REQUIREMENTS_VARIABLE = "RESEARCH_CREW_REQUIREMENTS"
SCORER_TOOLS = ("lean", "lake", "elan")

# -I isolates the interpreter; the bootstrap then puts only our two packages' folder(s) first on sys.path.
_BOOTSTRAP = ("import sys, runpy; sys.path[:0] = sys.argv[1].split(':'); del sys.argv[1]; "
              "runpy.run_module('challenges.framework._score_runner', run_name='__main__', alter_sys=True)")


@functools.cache
def bwrap_works() -> bool:
    """Whether bubblewrap can make a sandbox here (it needs user namespaces or root)."""
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--ro-bind", "/", "/",
             "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30, stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def scorer_env(environ: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """The scorer's environment: allowlisted variables only, its scratch as HOME and TMPDIR."""
    env = {k: v for k, v in environ.items() if k in ENV_ALLOWED or k.startswith(ENV_ALLOWED_PREFIXES)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=str(scratch), TMPDIR=str(scratch), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               OMP_WAIT_POLICY=environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    for name in EXTRA_READ_ONLY_VARIABLES:
        if environ.get(name):
            env[name] = environ[name]
    elan_home = Path(environ.get("ELAN_HOME") or Path(environ.get("HOME", "/nonexistent"), ".elan"))
    if elan_home.is_dir():
        env["ELAN_HOME"] = str(elan_home)
    if requirements := _requirements_dirs(environ):
        env["PYTHONPATH"] = ":".join(map(str, requirements))
    return env


def _requirements_dirs(environ: Mapping[str, str]) -> list[Path]:
    folder = environ.get(REQUIREMENTS_VARIABLE)
    return [Path(folder).resolve()] if folder and Path(folder).is_dir() else []


def _python_roots() -> list[Path]:
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots.add(Path(sys.executable).resolve().parent.parent)
    return [r for r in roots if r.is_dir()]


def _package_dirs() -> list[Path]:
    return [Path(p).resolve() for package in (challenges, checkpoints) for p in package.__path__]


def _tool_dirs(environ: Mapping[str, str]) -> list[Path]:
    """The install folders of the tools scorers run (Lean), so that they work inside the sandbox too."""
    found = [Path(environ[v]) for v in EXTRA_READ_ONLY_VARIABLES if environ.get(v)]
    elan_home = Path(environ.get("ELAN_HOME") or Path(environ.get("HOME", "/nonexistent"), ".elan"))
    if elan_home.is_dir():
        found.append(elan_home)
    for name in SCORER_TOOLS:
        where = shutil.which(name, path=environ.get("PATH"))
        if where:
            found += [Path(where).parent, Path(where).resolve().parent.parent]
    return [p.resolve() for p in found if p.exists()]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path == k or k in path.parents for k in kept):
            kept.append(path)
    return kept


def sandboxed_argv(*, read_only: Iterable[Path], writable: Iterable[Path], argv_tail: list[str],
                   gpus: bool, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The bwrap command line that runs the score runner with `argv_tail` (its own arguments)."""
    args = ["bwrap", "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
            "--tmpfs", "/tmp"]
    args += system_binds(SYSTEM_DIRS)
    system = [Path(d) for d in SYSTEM_DIRS if Path(d).is_dir()]
    for secret in ETC_SECRETS:
        if Path(secret).is_dir():
            args += ["--tmpfs", secret]
        elif Path(secret).exists():
            args += ["--ro-bind", "/dev/null", secret]
    shown = [*_python_roots(), *_package_dirs(), *(Path(p).resolve() for p in read_only), *_tool_dirs(environ),
             *_requirements_dirs(environ)]
    for folder in _outermost(p for p in shown if p.exists() and not any(p == s or s in p.parents for s in system)):
        args += ["--ro-bind", str(folder), str(folder)]
    for folder in writable:
        args += ["--bind", str(folder), str(folder)]
    args += ["--proc", "/proc", "--dev", "/dev"]
    if gpus:
        for node in gpu_devices():
            args += ["--dev-bind", str(node), str(node)]
    first = [*_requirements_dirs(environ), *(d.parent for d in _package_dirs())]
    sources = ":".join(dict.fromkeys(map(str, first)))
    return [*args, "--", sys.executable, "-I", "-c", _BOOTSTRAP, sources, *argv_tail]
