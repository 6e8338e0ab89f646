"""BabyLM scoring: rule checks on the model folder, then BLiMP accuracy through lm-eval."""

from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib.bits_per_byte import score_bits_per_byte
from challenges.lib.mcq import score_benchmark
from challenges.lib.model_checks import check_model_folder


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    return check_model_folder(submission)


def score(submission: Path, ctx: ScoreContext) -> Score:
    if ctx.preset == "smoke":  # a stated proxy (challenge.toml): the real metric cannot move at smoke size
        return score_bits_per_byte(submission, ctx)
    return score_benchmark(submission, ctx, "blimp")
