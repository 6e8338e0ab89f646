"""Small builders for challenge folders that tests write."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from challenges.framework.loader import BUILTIN_DIR

TOML = """\
name = "{name}"
title = "A test challenge"

[metric]
name = "value"
direction = "max"

[submission]
description = "a text file holding a number"

[presets.smoke]
hours = 0.05
gpus = 0
score_minutes = 0.5
"""


def write_challenge(root: Path, name: str = "toy", scorer: str = "", prepare: str | None = None,
                    toml: str | None = None) -> Path:
    """A minimal valid challenge folder; `scorer` replaces the body of scorer.py."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "challenge.toml").write_text(toml or TOML.format(name=name))
    (folder / "task.md").write_text("Write a number into a file.\n")
    (folder / "scorer.py").write_text(textwrap.dedent(scorer) or textwrap.dedent("""\
        from challenges import Score

        def score(submission, ctx):
            return Score(float(submission.read_text()), {"source": "file"})
        """))
    if prepare is not None:
        (folder / "prepare.py").write_text(textwrap.dedent(prepare))
    return folder


def copy_minipile(root: Path) -> Path:
    target = root / "minipile"
    shutil.copytree(BUILTIN_DIR / "minipile", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target
