"""Finds challenges (the built-in folders plus those on RESEARCH_CREW_CHALLENGE_PATH) and imports their files."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from challenges.framework.api import ChallengeError
from challenges.framework.spec import Challenge
from challenges.framework.validator import validate

BUILTIN_DIR = Path(__file__).resolve().parents[1]  # challenges/: the built-in challenge folders
PATH_VARIABLE = "RESEARCH_CREW_CHALLENGE_PATH"


def challenge_folders() -> dict[str, Path]:
    """Name -> folder for every challenge found; a folder on the path overrides a built-in of that name."""
    found: dict[str, Path] = {}
    roots = [BUILTIN_DIR] + [Path(p) for p in os.environ.get(PATH_VARIABLE, "").split(":") if p]
    for root in roots:
        if (root / "challenge.toml").is_file():  # the entry is itself a challenge folder
            found[root.name] = root
            continue
        if root.is_dir():
            for child in sorted(root.iterdir()):
                if (child / "challenge.toml").is_file():
                    found[child.name] = child
    return found


def load_challenge(name_or_path: str | Path) -> Challenge:
    """Load and validate a challenge by name, or by folder path; raise ChallengeError with the fix."""
    folder = _resolve(name_or_path)
    challenge, problems = validate(folder)
    if challenge is None:
        listing = "\n  ".join(str(p) for p in problems)
        raise ChallengeError(
            f"challenge folder {folder} is invalid:\n  {listing}",
            f"fix the fields above, then check with `research-crew challenges validate {folder}`",
        )
    return replace(challenge, builtin=folder.resolve().parent == BUILTIN_DIR)


def load_module(path: Path, name: str | None = None):
    """Import a Python file by path, with its folder importable for sibling helpers.

    `name` is the module's name in sys.modules (dataclasses and pickling look it up there); by default it is
    made from the file's folder and name, so `house-price/prepare.py` becomes `house_price_prepare`.
    """
    path = Path(path).resolve()
    name = name or re.sub(r"\W", "_", f"{path.parent.name}_{path.stem}")
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ChallengeError(f"cannot import {path}", "give the path of a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _resolve(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    if os.sep in text or text.startswith("."):
        folder = Path(text).expanduser()
        if not folder.is_dir():
            raise ChallengeError(f"no challenge folder at {folder}", "give an existing folder or a challenge name")
        return folder
    folders = challenge_folders()
    if text not in folders:
        known = ", ".join(sorted(folders)) or "none"
        raise ChallengeError(
            f"unknown challenge '{text}'; known challenges: {known}",
            f"pick one of those, or add a folder to {PATH_VARIABLE}",
        )
    return folders[text]
