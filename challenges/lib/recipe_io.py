"""What baseline recipes share: their three arguments, publishing their output all at once, and the GPT-2
pretraining recipe that several challenges reuse."""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

GPT2_RECIPE = Path(__file__).resolve().parents[1] / "minipile" / "baseline" / "train.py"


def recipe_parser(doc: str) -> argparse.ArgumentParser:
    """A parser with the arguments the baseline policy passes: --data, --out and --budget-s."""
    parser = argparse.ArgumentParser(description=doc.strip().split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the prepared data folder (read-only)")
    parser.add_argument("--out", type=Path, required=True, help="where the submission goes")
    parser.add_argument("--budget-s", type=float, required=True, help="wall-clock seconds for this script")
    return parser


@contextmanager
def publishing(out: Path) -> Iterator[Path]:
    """Yield an empty staging folder; when the block succeeds, it replaces `out` in one rename.

    A scorer (or a crew) looking at `out` meanwhile sees the previous submission or none, never half of one.
    """
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    yield staging
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def gpt2_recipe() -> ModuleType:
    """MiniPile's GPT-2 pretraining recipe, which BabyLM's and Edge LLM training's baselines reuse."""
    from challenges.framework.loader import load_module

    return load_module(GPT2_RECIPE, "gpt2_pretraining_recipe")
