"""Edge LLM training: float16/float32 weights within the memory limit, then SuperGLUE through lm-eval."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib.bits_per_byte import score_bits_per_byte
from challenges.lib.model_checks import check_float_weights, check_memory, check_model_folder, load_and_measure
from challenges.lib.superglue import score_superglue


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    problems = check_model_folder(submission)
    if problems:
        return problems
    problems = check_float_weights(submission)
    if problems:  # a quantized model is not loaded at all
        return problems
    limit = json.loads((ctx.data_dir / "meta.json").read_text())["memory_limit_bytes"]
    return check_memory(load_and_measure(submission), limit)


def score(submission: Path, ctx: ScoreContext) -> Score:
    if ctx.preset == "smoke":  # a stated proxy (challenge.toml): the real metric cannot move at smoke size
        return score_bits_per_byte(submission, ctx)
    return score_superglue(submission, ctx)
