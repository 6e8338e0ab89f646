"""Edge LLM compression: the artifact must be a float16/float32 phi model within the memory limit; MMLU."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib.bits_per_byte import score_bits_per_byte
from challenges.lib.mcq import score_benchmark
from challenges.lib.model_checks import (
    check_derived_model,
    check_memory,
    load_and_measure,
    stored_parameters,
)


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    problems = check_derived_model(submission, ctx.data_dir / "base_model",
                                   "compress the given model, do not replace it")
    if problems:  # a quantized or foreign model is not loaded at all
        return problems
    meta = json.loads((ctx.data_dir / "meta.json").read_text())
    if stored_parameters(submission) > meta["base_parameters"]:
        problems.append(f"the model has more parameters than the base model ({meta['base_parameters']:,})")
    return problems + check_memory(load_and_measure(submission), meta["memory_limit_bytes"])


def score(submission: Path, ctx: ScoreContext) -> Score:
    meta = json.loads((ctx.data_dir / "meta.json").read_text())
    # On smoke a stated proxy (challenge.toml): MMLU stays at chance on a tiny model, held-out bits per byte moves.
    scored = score_bits_per_byte(submission, ctx) if ctx.preset == "smoke" else score_benchmark(submission, ctx, "mmlu")
    parameters = stored_parameters(submission)
    return Score(scored.value, {**scored.details, "parameters": parameters,
                                "parameters_kept": parameters / meta["base_parameters"],
                                "memory_limit_bytes": meta["memory_limit_bytes"]}, items=scored.items)
