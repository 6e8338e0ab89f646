"""Multiple-choice benchmarks through lm-eval: MMLU, BLiMP and CosmosQA.

Full presets run lm-eval's own `mmlu` and `blimp` tasks (their datasets fetched at prepare time with
`lm_eval_scoring.prefetch_tasks`); CosmosQA (no lm-eval task) runs as a local task over the items of MLRB's
`AlgorithmicResearchGroup/llm_merging` set (`input`, `answer_choices`, `label`). Smoke presets run local tasks
over items generated here in the same formats and prompts. Every case goes through `lm_eval.simple_evaluate`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from challenges.framework.api import Score, ScoreContext
from challenges.lib.lm_eval_scoring import evaluate_tasks, mean_primary_metric, primary_items
from challenges.lib.lm_tasks import write_jsonl, write_task_yaml

HUB_TASKS = {"mmlu": "mmlu", "blimp": "blimp"}
# lm-eval's MMLU group weights its tasks by size (a mean over all questions); BLiMP's averages task means.
POOLED_HUB_GROUPS = {"mmlu"}
LETTERS = ["A", "B", "C", "D"]

# lm-eval's prompts for these tasks, so that a model sees the same text offline as on the hub tasks.
PROMPTS: dict[str, dict[str, Any]] = {
    "mmlu": {
        "doc_to_text": "The following are multiple choice questions (with answers) about {{subject}}.\n\n"
                       "{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\n"
                       "D. {{choices[3]}}\nAnswer:",
        "doc_to_choice": LETTERS,
        "doc_to_target": "answer",
    },
    "blimp": {"doc_to_text": "", "doc_to_choice": "{{[sentence_good, sentence_bad]}}", "doc_to_target": 0},
    # MLRB's CosmosQA items carry their prompt in `input` and the options in `answer_choices`.
    "cosmosqa": {"doc_to_text": "{{input}}", "doc_to_choice": "{{answer_choices}}", "doc_to_target": "label"},
}

NAMES = ["Ada", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana"]
NOUNS = [("cat", "cats"), ("dog", "dogs"), ("child", "children"), ("bird", "birds"), ("teacher", "teachers")]
VERBS = [("runs", "run"), ("sleeps", "sleep"), ("sings", "sing"), ("jumps", "jump"), ("reads", "read")]
COLORS = ["red", "blue", "green", "yellow"]


def smoke_items(benchmark: str, count: int = 80, seed: int = 7) -> dict[str, list[dict[str, Any]]]:
    """Generated items per local task name, in the benchmark's own format."""
    rng = random.Random(seed)
    makers: dict[str, dict[str, Callable[[random.Random], dict[str, Any]]]] = {
        "mmlu": {"smoke_mmlu_arithmetic": _mmlu_arithmetic, "smoke_mmlu_counting": _mmlu_counting},
        "blimp": {"smoke_blimp_agreement": _blimp_agreement, "smoke_blimp_determiner": _blimp_determiner},
        "cosmosqa": {"smoke_cosmosqa": _cosmosqa},
    }
    return {task: [make(rng) for _ in range(count)] for task, make in makers[benchmark].items()}


def write_smoke_items(private_dir: Path, benchmark: str, count: int = 80) -> None:
    for task, items in smoke_items(benchmark, count).items():
        write_jsonl(Path(private_dir) / benchmark / f"{task}.jsonl", items)


def score_benchmark(model_dir: Path, ctx: ScoreContext, benchmark: str) -> Score:
    """Mean accuracy on a benchmark (its hub task on full presets, its local tasks otherwise), with the
    per-task accuracies as details and the per-question results as items."""
    local = sorted((Path(ctx.private_dir) / benchmark).glob("*.jsonl"))
    if ctx.preset != "smoke" and benchmark in HUB_TASKS:
        output = evaluate_tasks(model_dir, [HUB_TASKS[benchmark]], ctx.device, batch_size=8)
        group = output.results.get(HUB_TASKS[benchmark], {})
        if isinstance(group.get("acc,none"), int | float):  # the group's own average, as lm-eval reports it
            pooled = benchmark if benchmark in POOLED_HUB_GROUPS else None
            return Score(float(group["acc,none"]), {"per_task": {benchmark: float(group["acc,none"])}},
                         items=primary_items(output, pooled_as=pooled))
        return _mean_score(output)
    if not local:
        raise FileNotFoundError(f"no {benchmark} items under {ctx.private_dir}; was the data prepared?")
    task_dir = Path(ctx.scratch_dir) / "lm_eval_tasks" / benchmark
    names = [path.stem for path in local]
    for name, path in zip(names, local, strict=True):
        write_task_yaml(task_dir, name, path, PROMPTS[benchmark], tag=f"{benchmark}-local")
    return _mean_score(evaluate_tasks(model_dir, names, ctx.device, include_path=task_dir, batch_size=16))


def _mean_score(output) -> Score:
    mean, per_task = mean_primary_metric(output.results)
    return Score(mean, {"per_task": per_task}, items=primary_items(output))


def _four_choices(rng: random.Random, right: str, wrong: Iterator[str]) -> tuple[list[str], int]:
    choices = [right]
    for option in wrong:
        if option not in choices:
            choices.append(option)
        if len(choices) == 4:
            break
    rng.shuffle(choices)
    return choices, choices.index(right)


def _mmlu_arithmetic(rng: random.Random) -> dict[str, Any]:
    a, b = rng.randint(1, 20), rng.randint(1, 20)
    wrong = (str(a + b + d) for d in (rng.choice([-3, -2, -1, 1, 2, 3]) for _ in range(40)))
    choices, answer = _four_choices(rng, str(a + b), wrong)
    return {"subject": "elementary mathematics", "question": f"What is {a} + {b}?", "choices": choices,
            "answer": answer}


def _mmlu_counting(rng: random.Random) -> dict[str, Any]:
    name, color, n = rng.choice(NAMES), rng.choice(COLORS), rng.randint(2, 9)
    wrong = (str(rng.randint(1, 12)) for _ in range(40))
    choices, answer = _four_choices(rng, str(n), wrong)
    question = f"{name} has {n} {color} balls and no others. How many {color} balls does {name} have?"
    return {"subject": "miscellaneous", "question": question, "choices": choices, "answer": answer}


def _blimp_agreement(rng: random.Random) -> dict[str, Any]:
    (one, many), (verb_s, verb_p) = rng.choice(NOUNS), rng.choice(VERBS)
    if rng.random() < 0.5:
        return {"sentence_good": f"The {one} {verb_s}.", "sentence_bad": f"The {one} {verb_p}."}
    return {"sentence_good": f"The {many} {verb_p}.", "sentence_bad": f"The {many} {verb_s}."}


def _blimp_determiner(rng: random.Random) -> dict[str, Any]:
    # Half the good sentences are the longer one, half the shorter, so that length alone scores at chance.
    (one, many), name = rng.choice(NOUNS), rng.choice(NAMES)
    if rng.random() < 0.5:
        return {"sentence_good": f"{name} saw these {many}.", "sentence_bad": f"{name} saw these {one}."}
    return {"sentence_good": f"{name} saw this {one}.", "sentence_bad": f"{name} saw this {many}."}


def _cosmosqa(rng: random.Random) -> dict[str, Any]:
    """An item in MLRB's CosmosQA format: the prompt in `input`, the options, the right one's index and text."""
    name, color = rng.choice(NAMES), rng.choice(COLORS)
    context = f"{name} painted the fence {color} on Sunday. It took the whole afternoon."
    others = [c for c in COLORS if c != color]
    options = [f"It is {color}.", *(f"It is {c}." for c in others)]
    rng.shuffle(options)
    label = options.index(f"It is {color}.")
    return {"input": f"{context}\nQuestion: What color is the fence now?\nAnswer:", "target": options[label],
            "answer_choices": options, "label": label}
