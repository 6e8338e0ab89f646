"""A challenge's `[environment] requirements`: which pip specifiers the installed packages do not meet.

Read from the installed distributions' metadata, never by importing them (an import can be slow or fail
for reasons of its own)."""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement


def unmet(requirements: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """(specifier, what is installed) for each requirement this environment does not meet."""
    found = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # not for this platform or Python
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            found.append((text, "not installed"))
            continue
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            found.append((text, f"{requirement.name} {version} is installed"))
    return found
