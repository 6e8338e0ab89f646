"""What the sandbox shows, as bubblewrap mount arguments: the system and the crew's Python read-only, the
run's own folders, GPU device nodes; hidden places masked wherever they lie inside a shown folder.

The system and the crew's Python are bound at their own paths (a venv only works where it was made). The
run's own folders are bound at fixed paths that say nothing about the host (the workspace at /sandbox/workspace,
the rest beside it), so that what a command prints (`pwd`, $HOME, a log's path) names no host folder; the
toolkit shows the paths in its results the same way (`View.inside`). The view is built from a list of what to
show, not by hiding things from the whole machine: what is not named here does not exist inside.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import checkpoints
from checkpoints.host_system import ETC_SECRETS, gpu_devices, system_binds
from toolkit.errors import ToolkitError

# System folders every program expects, read-only when present.
SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/sys")
# The NVIDIA persistence daemon's socket folder is bound in when present (GPU nodes: checkpoints.host_system).
NVIDIA_PERSISTENCED = Path("/run/nvidia-persistenced")
# Where the run's folders appear inside: the workspace, its home, logs, jobs, Python packages.
RUN_FOLDERS = Path("/sandbox")
WORKSPACE = RUN_FOLDERS / "workspace"


@dataclass(frozen=True)
class RunFolders:
    """The run's folders the sandbox shows: the workspace (read-write), its home and /tmp (read-write,
    per run), the prepared data (read-only at workspace/data), logs and jobs (read-only)."""

    workspace: Path
    home: Path
    tmp: Path
    data: Path | None = None
    read_only: tuple[Path, ...] = ()
    papers: Path | None = None  # the crew's downloaded papers, read-only at workspace/papers
    python_packages: tuple[Path, ...] = ()  # read-only, first on PYTHONPATH


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def python_roots() -> list[Path]:
    """The folders the crew's interpreter and its packages live in (a venv and the Python it was made from)."""
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots.add(Path(sys.executable).resolve().parent.parent)
    if sys.flags.no_user_site == 0:
        import site

        user_site = Path(site.getusersitepackages())
        if user_site.is_dir() and str(user_site) in sys.path:
            roots.add(user_site.resolve())
    return _outermost(r for r in roots if r.is_dir())


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Drop paths that lie inside another one of them (or inside the system folders)."""
    system = [Path(d) for d in SYSTEM_DIRS]
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(_inside(path, k) for k in [*kept, *system]):
            kept.append(path)
    return kept


def checkpoints_root() -> Path:
    """The folder holding the `checkpoints` package: training code (ours and the agents') imports
    checkpoints.training, so that one package is shown even when the rest of the project's source is not."""
    return Path(checkpoints.__file__).resolve().parent


def system_args() -> list[str]:
    args = system_binds(SYSTEM_DIRS)
    resolv = Path("/etc/resolv.conf").resolve()  # often a link into /run (systemd-resolved)
    if resolv.is_file() and not any(_inside(resolv, Path(d)) for d in SYSTEM_DIRS):
        args += ["--ro-bind", str(resolv), str(resolv)]
    return args


def mask_args(hidden: Iterable[Path], shown: Sequence[Path]) -> tuple[list[str], list[str]]:
    """Cover every hidden place that lies strictly inside a shown folder: an empty folder over a folder,
    /dev/null over a file. Hidden places elsewhere are simply never bound. Returns the masks and the
    remounts that make the empty folders read-only, to apply once every bind is in place (a bind may
    still need a mount point inside a mask)."""
    masks: list[str] = []
    remounts: list[str] = []
    for path in sorted({Path(os.path.abspath(h)) for h in hidden}, key=lambda p: (len(p.parts), str(p))):
        if not path.exists() or not any(_inside(path, s) and path != s for s in shown):
            continue
        if path.is_dir():
            masks += ["--tmpfs", str(path)]
            remounts += ["--remount-ro", str(path)]
        else:
            masks += ["--ro-bind", "/dev/null", str(path)]
    return masks, remounts


@dataclass(frozen=True)
class View:
    """The sandbox's mounts, the PYTHONPATH that makes `checkpoints` (and a run's packages) importable inside
    ("" when the shown Python already has it), and where each of the run's folders appears inside."""

    args: list[str]
    python_path: str
    places: dict[Path, Path]  # host folder -> the path commands inside see it at

    def inside(self, path: Path) -> Path:
        """`path` (a host path) as a command inside the sandbox sees it; unchanged when it is not in a run folder."""
        for host, seen in sorted(self.places.items(), key=lambda item: -len(item[0].parts)):
            if _inside(path, host):
                return seen / path.relative_to(host)
        return path


def view_args(folders: RunFolders, hidden: Iterable[Path], dev_root: Path = Path("/dev")) -> View:
    """All mount arguments, in the order bwrap must apply them, with the PYTHONPATH and the run's places."""
    python = python_roots()
    if any(_inside(root, RUN_FOLDERS) for root in python):
        raise ToolkitError(f"the crew's Python lies under {RUN_FOLDERS}, where the sandbox shows the run's folders",
                           "install research-crew into a Python (or venv) elsewhere")
    shown = [*(Path(d) for d in SYSTEM_DIRS if Path(d).is_dir()), *python]
    # /tmp first: the run's folders may lie under the host's /tmp, and must be mounted over it, not under.
    args = ["--bind", str(folders.tmp), "/tmp", *system_args()]
    for root in python:
        args += ["--ro-bind", str(root), str(root)]
    masks, remounts = mask_args([*hidden, *ETC_SECRETS], shown)
    args += masks
    places = {folders.workspace: WORKSPACE, folders.home: RUN_FOLDERS / "home"}
    args += ["--bind", str(folders.home), str(places[folders.home]), "--bind", str(folders.workspace), str(WORKSPACE)]
    if folders.data is not None:
        places[folders.data] = WORKSPACE / "data"
        args += ["--ro-bind", str(folders.data), str(WORKSPACE / "data")]
    if folders.papers is not None:
        places[folders.papers] = WORKSPACE / "papers"
        args += ["--ro-bind", str(folders.papers), str(WORKSPACE / "papers")]
    for path in folders.read_only:
        if path.is_dir():
            places[path] = RUN_FOLDERS / path.name
            args += ["--ro-bind", str(path), str(places[path])]
    python_path = []
    for number, path in enumerate(p for p in folders.python_packages if p.is_dir()):
        places[path] = RUN_FOLDERS / "packages" / str(number)
        args += ["--ro-bind", str(path), str(places[path])]
        python_path.append(str(places[path]))
    package = checkpoints_root()
    hidden_paths = [Path(os.path.abspath(h)) for h in hidden]
    visible = any(_inside(package, s) for s in shown) and not any(_inside(package, h) for h in hidden_paths)
    if not visible:  # at a path that names no project folder
        args += ["--ro-bind", str(package), str(RUN_FOLDERS / "lib" / package.name)]
        python_path.append(str(RUN_FOLDERS / "lib"))
    args += ["--proc", "/proc", "--dev", "/dev"]
    for node in gpu_devices(dev_root):
        args += ["--dev-bind", str(node), f"/dev/{node.name}"]
    if gpu_devices(dev_root) and NVIDIA_PERSISTENCED.is_dir():
        args += ["--bind", str(NVIDIA_PERSISTENCED), str(NVIDIA_PERSISTENCED)]
    args += ["--dir", "/var", "--symlink", "/tmp", "/var/tmp", *remounts, "--remount-ro", "/"]
    return View(args, ":".join(python_path), places)
