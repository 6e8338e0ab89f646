"""LLM efficiency: the submission must be the base model's architecture in a float dtype; MMLU accuracy."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.mcq import score_benchmark
from challenges.model_checks import check_float_weights, check_model_folder, read_config, stored_parameters

PARAMETER_TOLERANCE = 0.10


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    problems = check_model_folder(submission)
    if problems:
        return problems
    meta = json.loads((ctx.data_dir / "meta.json").read_text())
    base_type = read_config(ctx.data_dir / "base_model")["model_type"]
    model_type = read_config(submission).get("model_type")
    if model_type != base_type:
        problems.append(f"model_type is '{model_type}', the base model {meta['base_model']} is '{base_type}': "
                        "fine-tune the given base model")
    problems += check_float_weights(submission, allowed=("F16", "BF16", "F32"))
    if not problems:
        parameters, base = stored_parameters(submission), meta["base_parameters"]
        if abs(parameters - base) > PARAMETER_TOLERANCE * base:
            problems.append(f"the model has {parameters:,} parameters, the base model {base:,}: merge adapters "
                            "into the base model (peft's merge_and_unload) and save that")
    return problems


def score(submission: Path, ctx: ScoreContext) -> Score:
    accuracy, per_task = score_benchmark(submission, ctx, "mmlu")
    return Score(accuracy, {"per_task": per_task, "parameters": stored_parameters(submission)})
