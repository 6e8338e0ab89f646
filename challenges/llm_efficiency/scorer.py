"""LLM efficiency: the submission must be the base model's architecture in a float dtype; MMLU accuracy."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib.bits_per_byte import score_bits_per_byte
from challenges.lib.mcq import score_benchmark
from challenges.lib.model_checks import check_derived_model, stored_parameters

PARAMETER_TOLERANCE = 0.10


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    meta = json.loads((ctx.data_dir / "meta.json").read_text())
    problems = check_derived_model(submission, ctx.data_dir / "base_model",
                                   f"fine-tune the given base model ({meta.get('base_model')})", ("F16", "BF16", "F32"))
    if not problems:
        parameters, base = stored_parameters(submission), meta["base_parameters"]
        if abs(parameters - base) > PARAMETER_TOLERANCE * base:
            problems.append(f"the model has {parameters:,} parameters, the base model {base:,}: merge adapters "
                            "into the base model (peft's merge_and_unload) and save that")
    return problems


def score(submission: Path, ctx: ScoreContext) -> Score:
    if ctx.preset == "smoke":  # a stated proxy (challenge.toml): MMLU cannot move on a tiny random model
        return score_bits_per_byte(submission, ctx)
    mmlu = score_benchmark(submission, ctx, "mmlu")
    return Score(mmlu.value, {**mmlu.details, "parameters": stored_parameters(submission)}, items=mmlu.items)
