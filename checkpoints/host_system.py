"""The host system as both bubblewrap sandboxes show it (the agents' in toolkit/sandbox_mounts.py, the scorer's
in challenges/framework/score_sandbox.py): its folders read-only, its secrets covered, GPU device nodes by name.
It lives here because neither of those packages may import the other (tests/architecture)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# On a merged-/usr system these are symlinks into /usr and are recreated as such; elsewhere they are bound.
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Readable by root, and bwrap's root is the user's own uid: keep the machine's password hashes and host keys out.
ETC_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
               "/etc/ssh", "/etc/security/opasswd")
# GPU device nodes are bound in when present.
GPU_DEVICE_GLOBS = ("nvidia*", "dri")


def system_binds(folders: Iterable[str]) -> list[str]:
    """bwrap arguments that show the top-level links and each of `folders` (when present) read-only."""
    args: list[str] = []
    for name in TOP_LEVEL_LINKS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for name in folders:
        if Path(name).is_dir():
            args += ["--ro-bind", name, name]
    return args


def gpu_devices(dev_root: Path = Path("/dev")) -> list[Path]:
    return sorted({p for pattern in GPU_DEVICE_GLOBS for p in dev_root.glob(pattern)})
