"""Agents' commands and jobs inside a bubblewrap (bwrap) sandbox.

Inside, a command sees the system and the crew's Python read-only, the workspace read-write at
/sandbox/workspace, the prepared data read-only at workspace/data (a bind: `data/..` is the workspace, not
the data cache), the run's logs and job records read-only, a home folder and a /tmp of the run's own (the
run's folders at paths that name no host folder: toolkit/sandbox_mounts.py), and nothing else of the machine's:
no data cache or private answers, no project source (only the `checkpoints` package that training code
imports), no other runs, no state, trace or evaluations of this one, no home directory. It has its own
pid namespace (the crew's /proc and pid are out of reach, so it cannot be signalled), its own /dev (GPU
nodes bound in), an environment without secrets, and the network only when the run allows it.

The harness, the scorers and the crew run outside. The sandbox keeps the toolkit's process contract:
bwrap stays in the command's process group, so killing the group kills everything inside, and when the
command ends the pid namespace ends with it, taking any leftover processes along.
"""

from __future__ import annotations

import hashlib
import logging
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolkit.egress import DNS as EGRESS_DNS
from toolkit.env import agent_env
from toolkit.errors import ToolkitError
from toolkit.limits import address_space_prefix, new_pids_group, pids_parent
from toolkit.sandbox_mounts import WORKSPACE, RunFolders, view_args

log = logging.getLogger(__name__)

SANDBOX_KINDS = ("bwrap", "none")

# bwrap dies on SIGTERM, and its death SIGKILLs the whole pid namespace: a job asked to stop would get no
# time to save a checkpoint. So bwrap runs with SIGTERM ignored, and the command gets the default back
# (ignored signals are inherited through exec; coreutils env 8.31+ sets and resets them).
_OUTER = ("env", "--ignore-signal=TERM", "bwrap")
_INNER = ("env", "--default-signal=TERM")
# Every capability goes, even for root (bwrap keeps them for a root caller): with CAP_SYS_ADMIN an agent could
# unmount the masks and remount the read-only binds writable.
_CAPS = ("--cap-drop", "ALL")
# bwrap's own command line is the sandbox's /proc/1/cmdline: the mount list (the host paths of the data, the
# masks) goes through a file descriptor instead (bwrap closes it once read), so the command line names none.
_ARGS_FROM_FILE = '{cgroup}exec 3<"$1" && shift && exec {limits}env --ignore-signal=TERM bwrap --args 3 "$@"'

# Variables that name places outside the sandbox (caches, sockets, the crew's own folders) or would load
# code from them; tools inside fall back to their defaults under the sandbox's home.
_ENV_DROPPED = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PWD", "OLDPWD",
    "TMPDIR", "TMP", "TEMP", "MAIL", "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "GNUPGHOME",
    "DBUS_SESSION_BUS_ADDRESS", "KRB5CCNAME", "NETRC", "DOCKER_CONFIG", "KUBECONFIG", "XDG_RUNTIME_DIR",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "HF_HOME", "HF_HUB_CACHE",
    "HF_DATASETS_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "TORCH_HOME", "PIP_CACHE_DIR",
    "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "MPLCONFIGDIR",
})
_ENV_DROPPED_PREFIXES = ("RESEARCH_CREW_",)


@dataclass(frozen=True)
class SandboxPolicy:
    """How a run confines its agents: whether they reach the network, and places that must stay invisible
    even when they lie inside a folder the sandbox shows (the data cache, challenge folders, the project's
    source). `dev_root` is where GPU device nodes are looked for."""

    network: bool | str = "egress"  # off, egress (internet but not the host: toolkit/egress.py) or host
    hidden: tuple[Path, ...] = ()
    dev_root: Path = Path("/dev")
    # Per command or job: how many more processes (threads count) it may start, and its address space
    # (None: no cap; a GPU process maps far more address space than memory, so runs with GPUs leave it off).
    max_processes: int | None = 2048
    max_memory_bytes: int | None = None
    # Folders of Python packages shown read-only and first on PYTHONPATH (a challenge's requirements, installed
    # by `run --install-requirements` into a folder of the run's own).
    python_packages: tuple[Path, ...] = ()

    @property
    def network_mode(self) -> str:
        """off, egress or host (True, from before egress existed, meant the host's network)."""
        if isinstance(self.network, bool):
            return "host" if self.network else "off"
        return self.network


class Sandbox:
    """The bwrap command line for one run's workspace, built once and put in front of every command."""

    def __init__(self, policy: SandboxPolicy, *, run_dir: Path, workspace: Path, data_dir: Path | None = None,
                 papers_dir: Path | None = None):
        self.policy = policy
        self.home = run_dir / "home"
        self.tmp = run_dir / "tmp"
        logs, jobs = run_dir / "logs", run_dir / "jobs"
        for folder in (self.home, self.tmp, logs, jobs):
            folder.mkdir(parents=True, exist_ok=True)
        folders = RunFolders(workspace, self.home, self.tmp, data_dir, read_only=(logs, jobs), papers=papers_dir,
                             python_packages=policy.python_packages)
        hidden = (*policy.hidden, Path.home(), run_dir)
        self.view = view_args(folders, hidden, policy.dev_root)
        self.python_path = self.view.python_path
        mode = policy.network_mode
        namespaces = ["--unshare-all", *(["--share-net"] if mode == "host" else [])]
        egress: list[str] = []
        if mode == "egress":  # a namespace of its own, its network set up by slirp4netns (toolkit/egress.py)
            resolv = run_dir / "resolv.conf"
            resolv.write_text(f"nameserver {EGRESS_DNS}\n")
            egress = ["--ro-bind", str(resolv), "/etc/resolv.conf", "--info-fd", "4", "--block-fd", "5"]
        self.args_file = run_dir / "sandbox.args"  # in the run's folder, which the sandbox never shows
        self.args = [*namespaces, *_CAPS, *self.view.args, *egress, "--chdir", str(WORKSPACE)]
        self.args_file.write_bytes(b"".join(a.encode() + b"\0" for a in self.args))
        self._launcher = [sys.executable, "-I", str(Path(__file__).with_name("egress.py"))] if egress else []
        # A pids cgroup per command where the machine lets us make one (toolkit/limits.py).
        tag = hashlib.sha256(str(run_dir).encode()).hexdigest()[:12]
        self.pids_parent = pids_parent(tag) if policy.max_processes is not None else None

    def wrap(self, argv: Sequence[str], *, die_with_parent: bool = True) -> list[str]:
        """`argv` run inside the sandbox. A command dies with the process that started it; a background
        job does not (it must outlive the crew, and its runner or any toolkit enforces its deadline)."""
        cgroup = ""
        if self.pids_parent is not None and self.policy.max_processes is not None:
            group = new_pids_group(self.pids_parent, self.policy.max_processes)
            cgroup = f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))} && "
        script = _ARGS_FROM_FILE.format(cgroup=cgroup, limits=address_space_prefix(self.policy.max_memory_bytes))
        return [*self._launcher, "sh", "-c", script, "bwrap", str(self.args_file),
                *(["--die-with-parent"] if die_with_parent else []), "--", *_INNER, *argv]

    def inside(self, path: Path) -> Path:
        """A host path as commands inside see it (a run folder's path there; any other path unchanged)."""
        return self.view.inside(path)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` as a command inside sees it: only allowlisted variables (toolkit.env.agent_env), nothing
        pointing outside, its own home and /tmp."""
        inside = {k: v for k, v in agent_env(env).items()
                  if k not in _ENV_DROPPED and not k.startswith(_ENV_DROPPED_PREFIXES)}
        inside.update(HOME=str(self.view.inside(self.home)), TMPDIR="/tmp")
        if self.python_path:
            inside["PYTHONPATH"] = self.python_path
        return inside

    def check(self, env: Mapping[str, str]) -> None:
        """Start the sandbox once, so that a view bwrap cannot build fails here, named, not in every command."""
        done = subprocess.run(self.wrap(["true"]), env=self.environment(env), capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ToolkitError(f"the agents' sandbox does not start: {(done.stderr or done.stdout).strip()[-500:]}",
                               "check that bubblewrap works here (research-crew run says how), or run with "
                               "--sandbox none")


def bwrap_problem() -> str | None:
    """None when bubblewrap can make a sandbox here; else what stops it, for an error message."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [*_OUTER, "--unshare-all", *_CAPS, "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
             "--dev", "/dev", "--", *_INNER, "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bwrap could not be started: {err}"
    if done.returncode == 0:
        return None
    detail = (done.stderr or done.stdout).strip().splitlines()
    text = detail[-1] if detail else f"exit code {done.returncode}"
    if text.startswith("env:"):
        return f"coreutils env is too old for the sandbox (it needs 8.31 or later for --ignore-signal): {text}"
    return f"bwrap cannot create a sandbox here (user namespaces are likely disabled): {text}"
