"""LLM merging: the merge must be of compatible experts and match their architecture; MMLU, CosmosQA, XSum."""

import json
from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib.bits_per_byte import score_bits_per_byte
from challenges.lib.generation import generate_texts, rouge_l
from challenges.lib.lm_tasks import read_jsonl
from challenges.lib.mcq import score_benchmark
from challenges.lib.model_checks import (
    check_float_weights,
    check_model_folder,
    read_config,
    stored_parameters,
    tensor_shapes,
)

XSUM_PROMPT = "Summarize the following article in one sentence.\n\n{document}\n\nSummary:"


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    problems = check_model_folder(submission)
    merge_file = submission / "merge.json"
    if not merge_file.is_file():
        return problems + ["merge.json is missing: write {\"experts\": [names in data/experts], \"method\": ...}"]
    if problems:
        return problems
    meta = json.loads((ctx.data_dir / "meta.json").read_text())
    names = json.loads(merge_file.read_text()).get("experts") or []
    unknown = [n for n in names if not (ctx.data_dir / "experts" / n / "config.json").is_file()]
    if not names or unknown:
        return [f"merge.json names experts {unknown or names} that are not in data/experts "
                f"(known: {', '.join(meta['experts'])})"]
    problems += compatibility_problems([ctx.data_dir / "experts" / n for n in names], submission)
    problems += check_float_weights(submission, allowed=("F16", "BF16", "F32"))
    if stored_parameters(submission) > meta["max_parameters"]:
        problems.append(f"the merged model has over {meta['max_parameters']:,} parameters")
    return problems


def compatibility_problems(experts: list[Path], merged: Path) -> list[str]:
    """Experts and merge share one model type and the same tensor names and shapes."""
    reference, reference_shapes = experts[0], _shapes(experts[0])
    model_type = read_config(reference).get("model_type")
    problems = []
    for other in [*experts[1:], merged]:
        label = "the merged model" if other == merged else f"expert '{other.name}'"
        other_type = read_config(other).get("model_type")
        if other_type != model_type:
            problems.append(f"incompatible architectures: {label} is '{other_type}', expert '{reference.name}' "
                            f"is '{model_type}'; merge only experts of one architecture")
            continue
        shapes = _shapes(other)
        if shapes != reference_shapes:
            differing = sorted(set(shapes) ^ set(reference_shapes)) or sorted(
                k for k in shapes if shapes[k] != reference_shapes[k])
            problems.append(f"incompatible architectures: {label} differs from expert '{reference.name}' in "
                            f"{len(differing)} tensor(s), e.g. {differing[:3]}")
    return problems


def _shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    return {name: shape for name, (_, shape) in tensor_shapes(folder).items()}


def score(submission: Path, ctx: ScoreContext) -> Score:
    if ctx.preset == "smoke":  # a stated proxy (challenge.toml): the three tasks stay at chance on tiny experts
        return score_bits_per_byte(submission, ctx)
    # No per-item results: the score mixes accuracies with a corpus ROUGE-L, so it has no held-out pick.
    mmlu_score = score_benchmark(submission, ctx, "mmlu")
    mmlu, mmlu_tasks = mmlu_score.value, mmlu_score.details["per_task"]
    cosmosqa = score_benchmark(submission, ctx, "cosmosqa").value
    items = read_jsonl(ctx.private_dir / "xsum.jsonl")
    summaries = generate_texts(submission, [XSUM_PROMPT.format(document=i["input"]) for i in items], ctx.device,
                               max_new_tokens=32 if ctx.preset == "smoke" else 64)
    xsum = rouge_l([s.split("\n")[0] for s in summaries], [i["target"] for i in items])
    parts = {"mmlu_acc": mmlu, "cosmosqa_acc": cosmosqa, "xsum_rougeL": xsum}
    # No generated text in the details: agents read them, and a summary of a private document tells about it.
    return Score(sum(parts.values()) / len(parts), {**parts, "mmlu_per_task": mmlu_tasks})
