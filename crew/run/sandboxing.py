"""A run's sandbox for its agents: the choice (run.toml), the check that it can work here, the one line
`run` prints, what result.json and the report say, and the toolkit policy with everything agents must not see.

The baseline policy runs the challenge's own reference recipe (trusted like its scorer) and no agent
commands, so it needs no sandbox: a baseline run neither checks for bubblewrap nor warns.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

import challenges
import crew
import memory
import toolkit
from challenges.framework import gpu_memory
from challenges.framework.data import cache_root
from challenges.framework.loader import PATH_VARIABLE
from challenges.framework.spec import Preset
from crew.errors import CrewError
from memory.paths import global_memory_dir
from toolkit.sandbox import SANDBOX_KINDS, SandboxPolicy, bwrap_problem

NETWORK_CHOICES = ("egress", "off", "host")  # egress: the internet but not the host (toolkit/egress.py)
HOST_NETWORK_WARNING = ("agents' commands shared the host's network (--agent-network host): servers on the "
                        "host's loopback and its abstract unix sockets were within their reach")
UNCONFINED_WARNING = ("agents' commands ran without a sandbox (--sandbox none): the held-out answers, the "
                      "scorers and the machine's files were within their reach, so the score is not "
                      "trustworthy by construction")
BWRAP_FIXES = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or enable unprivileged user "
               "namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
               "kernel.apparmor_restrict_unprivileged_userns=0; in a container, allow them), or pass "
               "--sandbox none (recorded in the run and its report as an integrity warning)")


def parse_choice(sandbox: str, agent_network: str) -> tuple[str, str]:
    """The validated --sandbox and --agent-network values."""
    if sandbox not in SANDBOX_KINDS:
        raise CrewError(f"unknown sandbox '{sandbox}'", f"use --sandbox {' or --sandbox '.join(SANDBOX_KINDS)}")
    if agent_network not in NETWORK_CHOICES:
        raise CrewError(f"--agent-network takes egress, off or host, not '{agent_network}'",
                        "use --agent-network egress (the internet but not this machine's own services), off, or "
                        "host (an integrity warning)")
    if sandbox == "none":  # nothing confines the agents' commands: they share the host's network, say so
        if agent_network == "off":
            raise CrewError("--agent-network off needs the bwrap sandbox: with --sandbox none nothing cuts the "
                            "agents' commands off the network", "drop --sandbox none, or --agent-network off")
        return sandbox, "host"
    return sandbox, agent_network


def network_mode(value: bool | str) -> str:
    """run.toml's agent_network: egress, off or host (runs from before egress saved true for the host's)."""
    if isinstance(value, bool):
        return "host" if value else "off"
    return value


def check_sandbox(sandbox: str, *, baseline: bool, resuming: bool = False,
                  network: bool | str = "off") -> None:
    """Stop (exit 2) when the chosen sandbox cannot run here."""
    if baseline or sandbox != "bwrap":
        return
    problem = bwrap_problem()
    started = " (this run was started with it, and resumes only inside it)" if resuming else ""
    if problem:
        raise CrewError(f"the agents' sandbox cannot run on this machine{started}: {problem}", BWRAP_FIXES)
    if network_mode(network) == "egress" and shutil.which("slirp4netns") is None:
        raise CrewError(f"--agent-network egress needs slirp4netns, which is not installed{started}",
                        "install it (Debian/Ubuntu: apt-get install slirp4netns), or pass --agent-network off "
                        "(no network) or host (the host's network, an integrity warning)")


def sandbox_line(sandbox: str, network: bool | str, *, baseline: bool) -> str:
    """The line `run` prints about the sandbox in force."""
    if baseline:
        return "sandbox: none needed (the baseline policy runs only the challenge's own recipe, no agent commands)"
    if sandbox == "none":
        return f"sandbox: NONE — integrity warning: {UNCONFINED_WARNING}"
    mode = network_mode(network)
    line = (f"sandbox: bubblewrap (agents see the workspace, the data read-only and the system read-only; "
            f"network {mode})")
    return line + (f" — integrity warning: {HOST_NETWORK_WARNING}" if mode == "host" else "")


def sandbox_record(config: Mapping[str, Any]) -> dict[str, Any]:
    """The sandbox in force, as result.json and the report give it, from run.toml's values."""
    kind = config.get("sandbox", "bwrap")
    network = network_mode(config.get("agent_network", True))
    if config.get("model") == "baseline":
        return {"kind": "none", "agent_network": network, "warning": None,
                "note": "the baseline policy runs no agent commands"}
    warning = UNCONFINED_WARNING if kind == "none" else HOST_NETWORK_WARNING if network == "host" else None
    return {"kind": kind, "agent_network": network, "warning": warning}


def agent_sandbox(run_toml: Path, preset: Preset | None = None, *, gpus: bool = False) -> SandboxPolicy | None:
    """The toolkit's sandbox policy for a run (None for --sandbox none), from its run.toml and the preset's
    limits (an address-space cap only without GPUs: CUDA maps far more address space than memory)."""
    from crew.run.config import RunConfig

    config = RunConfig.load(run_toml)
    if config.sandbox == "none":
        return None
    preset = preset or Preset(name=config.preset, hours=1.0)
    memory = None if gpus else int((preset.max_memory_gb or psutil.virtual_memory().total / 2**30) * 2**30)
    packages = (Path(config.requirements_env),) if config.requirements_env else ()
    if gpu_memory.VARIABLE in os.environ:  # capped by the runner: the hook rides on PYTHONPATH inside too
        packages += (gpu_memory.HOOK_DIR,)
    return SandboxPolicy(network=network_mode(config.agent_network),
                         hidden=hidden_places(Path(config.challenge_dir), run_toml.parent),
                         max_processes=preset.max_processes or None, max_memory_bytes=memory,
                         python_packages=packages)


def declared_env(preset: Preset) -> dict[str, str]:
    """What agents' commands and jobs get besides the sandbox's allowlist: the preset's `env`, and the GPU
    memory cap the runner set for this run (crew/policy/runner.py; its name is one the sandbox drops)."""
    env = dict(preset.env)
    if gpu_memory.VARIABLE in os.environ:
        env[gpu_memory.VARIABLE] = os.environ[gpu_memory.VARIABLE]
    return env


def slurm_partition(run_toml: Path) -> str | bool | None:
    """For the toolkit: False for local jobs, else the SLURM partition (None: the cluster's default)."""
    from crew.run.config import RunConfig

    config = RunConfig.load(run_toml)
    return False if config.jobs != "slurm" else config.jobs_partition


def slurm_max_jobs(run_toml: Path) -> int:
    """For the toolkit: the run's jobs on the cluster at once (`run --max-jobs`; runs from before it: the default)."""
    from crew.run.cluster import DEFAULT_MAX_JOBS
    from crew.run.config import RunConfig

    return RunConfig.load(run_toml).jobs_max or DEFAULT_MAX_JOBS


def hidden_places(challenge_dir: Path, run_dir: Path) -> tuple[Path, ...]:
    """Everything agents must not see even where it lies inside a folder the sandbox shows (an installed
    package inside the Python it shows, say): the data cache with every private/ folder, the challenges and
    their scorers, the project's source, the global memory and the other runs. The toolkit adds the home
    directory and this run's own folder; anything not named here and not shown is invisible anyway."""
    places = [cache_root(), challenge_dir, global_memory_dir(), run_dir.parent]
    places += [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(":") if p]
    for package in (challenges, memory, toolkit, crew):  # not checkpoints: training code imports it
        places += [Path(p) for p in package.__path__]
    return tuple(dict.fromkeys(Path(os.path.abspath(p)) for p in places))
