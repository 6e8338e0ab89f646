"""A challenge's `[environment] requirements`: which pip specifiers the installed packages do not meet.

Read from the installed distributions' metadata, never by importing them (an import can be slow or fail
for reasons of its own)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from challenges.framework.api import ChallengeError


def unmet(requirements: tuple[str, ...] | list[str], first: list[str] | None = None) -> list[tuple[str, str]]:
    """(specifier, what is installed) for each requirement this environment (with the folders `first` ahead of
    it, as PYTHONPATH puts them) does not meet."""
    found = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # not for this platform or Python
        try:
            found_dist = next(iter(metadata.distributions(name=requirement.name, path=[*(first or []), *sys.path])),
                              None)
            if found_dist is None:
                raise metadata.PackageNotFoundError(requirement.name)
            version = found_dist.version
        except metadata.PackageNotFoundError:
            found.append((text, "not installed"))
            continue
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            found.append((text, f"{requirement.name} {version} is installed"))
    return found


def install(requirements: tuple[str, ...] | list[str], root: Path) -> Path:
    """Install what this environment lacks of `requirements` into a folder of its own under `root` (never into
    the running environment) and return it; put it first on PYTHONPATH to use it. The folder is keyed by the
    requirements and reused. Only what is unmet is installed (`--no-deps`, then the new packages' own unmet
    dependencies, round by round), so the environment's other packages are not shadowed by fresh copies."""
    key = hashlib.sha256("\n".join(sorted(requirements)).encode()).hexdigest()[:12]
    target = Path(root) / key
    if (target / ".complete").exists():
        return target
    staging = target.with_name(f".{key}-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    wanted = [spec for spec, _ in unmet(requirements)]
    for _ in range(MAX_ROUNDS):
        if not wanted:
            break
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                               str(staging), *wanted], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ChallengeError(f"pip could not install {', '.join(wanted)}:\n{done.stderr[-1500:]}",
                                 "check the specifiers in [environment] requirements and the package index")
        wanted = _unmet_dependencies(staging, list(requirements))
    left = unmet(requirements, [str(staging)])
    if left or wanted:
        shutil.rmtree(staging, ignore_errors=True)
        raise ChallengeError(f"after installing, still unmet: {left or wanted}",
                             "install them yourself, or loosen the specifiers")
    (staging / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    return target


MAX_ROUNDS = 5


def _unmet_dependencies(folder: Path, stated: list[str]) -> list[str]:
    """Dependencies of the packages in `folder` that neither it nor this environment meets."""
    needs = []
    for dist in metadata.distributions(path=[str(folder)]):
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                needs.append(str(requirement))
    return sorted({spec for spec, _ in unmet(needs, [str(folder)])} - set(stated))
