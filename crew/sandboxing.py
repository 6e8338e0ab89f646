"""A run's sandbox for its agents: the choice (run.toml), the check that it can work here, the one line
`run` prints, what result.json and the report say, and the toolkit policy with everything agents must not see.

The baseline policy runs the challenge's own reference recipe (trusted like its scorer) and no agent
commands, so it needs no sandbox: a baseline run neither checks for bubblewrap nor warns.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import challenges
import crew
import memory
import toolkit
from challenges.data import cache_root
from challenges.loader import PATH_VARIABLE
from crew.errors import CrewError
from memory.paths import global_memory_dir
from toolkit.sandbox import SANDBOX_KINDS, SandboxPolicy, bwrap_problem

NETWORK_CHOICES = {"on": True, "off": False}
UNCONFINED_WARNING = ("agents' commands ran without a sandbox (--sandbox none): the held-out answers, the "
                      "scorers and the machine's files were within their reach, so the score is not "
                      "trustworthy by construction")
BWRAP_FIXES = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or enable unprivileged user "
               "namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
               "kernel.apparmor_restrict_unprivileged_userns=0; in a container, allow them), or pass "
               "--sandbox none (recorded in the run and its report as an integrity warning)")


def parse_choice(sandbox: str, agent_network: str) -> tuple[str, bool]:
    """The validated --sandbox and --agent-network values."""
    if sandbox not in SANDBOX_KINDS:
        raise CrewError(f"unknown sandbox '{sandbox}'", f"use --sandbox {' or --sandbox '.join(SANDBOX_KINDS)}")
    if agent_network not in NETWORK_CHOICES:
        raise CrewError(f"--agent-network takes on or off, not '{agent_network}'", "use --agent-network on or off")
    return sandbox, NETWORK_CHOICES[agent_network]


def check_sandbox(sandbox: str, *, baseline: bool, resuming: bool = False) -> None:
    """Stop (exit 2) when the chosen sandbox cannot run here."""
    if baseline or sandbox != "bwrap":
        return
    problem = bwrap_problem()
    if problem:
        started = " (this run was started with it, and resumes only inside it)" if resuming else ""
        raise CrewError(f"the agents' sandbox cannot run on this machine{started}: {problem}", BWRAP_FIXES)


def sandbox_line(sandbox: str, network: bool, *, baseline: bool) -> str:
    """The line `run` prints about the sandbox in force."""
    if baseline:
        return "sandbox: none needed (the baseline policy runs only the challenge's own recipe, no agent commands)"
    if sandbox == "none":
        return f"sandbox: NONE — integrity warning: {UNCONFINED_WARNING}"
    return (f"sandbox: bubblewrap (agents see the workspace, the data read-only and the system read-only; "
            f"network {'on' if network else 'off'})")


def sandbox_record(config: Mapping[str, Any]) -> dict[str, Any]:
    """The sandbox in force, as result.json and the report give it, from run.toml's values."""
    kind = config.get("sandbox", "bwrap")
    network = bool(config.get("agent_network", True))
    if config.get("model") == "baseline":
        return {"kind": "none", "agent_network": network, "warning": None,
                "note": "the baseline policy runs no agent commands"}
    return {"kind": kind, "agent_network": network, "warning": UNCONFINED_WARNING if kind == "none" else None}


def agent_sandbox(run_toml: Path) -> SandboxPolicy | None:
    """The toolkit's sandbox policy for a run (None for --sandbox none), from its run.toml."""
    from crew.config import RunConfig

    config = RunConfig.load(run_toml)
    if config.sandbox == "none":
        return None
    return SandboxPolicy(network=config.agent_network, hidden=hidden_places(Path(config.challenge_dir),
                                                                            run_toml.parent))


def slurm_partition(run_toml: Path) -> str | bool | None:
    """For the toolkit: False for local jobs, else the SLURM partition (None: the cluster's default)."""
    from crew.config import RunConfig

    config = RunConfig.load(run_toml)
    return False if config.jobs != "slurm" else config.jobs_partition


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
