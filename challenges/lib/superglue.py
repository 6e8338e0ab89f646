"""SuperGLUE scoring: lm-eval's `super-glue-lm-eval-v1` tasks for full presets, and an offline smoke set.

The smoke set has BoolQ, CB and COPA items generated here, in those tasks' formats and with the same
prompts as lm-eval's own YAML, and runs through the same `lm_eval.simple_evaluate` call.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from challenges.framework.api import Score, ScoreContext
from challenges.lib.lm_eval_scoring import evaluate_tasks, mean_primary_metric, primary_items
from challenges.lib.lm_tasks import write_task_yaml

FULL_TASKS = ["super-glue-lm-eval-v1"]
SMOKE_TASKS = ["smoke_boolq", "smoke_cb", "smoke_copa"]

NAMES = ["Ada", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lena"]
THINGS = ["apples", "books", "coins", "lamps", "maps", "pens", "shells", "stones", "tickets", "cups"]
COLORS = ["red", "blue", "green", "yellow", "black", "white"]
OBJECTS = ["car", "door", "kite", "boat", "chair", "hat"]
# (premise, cause-or-effect question, right answer, wrong answer)
COPA_FACTS = [
    ("The soup was too hot.", "effect", "I waited for it to cool.", "I added more ice to my drink."),
    ("The man lost his keys.", "effect", "He could not open the door.", "He bought a new hat."),
    ("The road was wet.", "cause", "It had rained all night.", "The sun was bright."),
    ("The girl was tired.", "cause", "She had run a long race.", "She had slept all day."),
    ("The glass fell on the floor.", "effect", "It broke into pieces.", "It turned into water."),
    ("The crowd cheered.", "cause", "The team scored a goal.", "The lights were off."),
    ("The plant grew tall.", "cause", "It got sun and water.", "It was kept in a dark box."),
    ("The phone battery died.", "effect", "I plugged it in to charge.", "I washed the dishes."),
    ("The baby cried.", "cause", "She was hungry.", "She was asleep."),
    ("The ice melted.", "cause", "The day was warm.", "The freezer was cold."),
]

TASK_YAML = {
    "smoke_boolq": {
        "doc_to_text": "{{passage}}\nQuestion: {{question}}?\nAnswer:",
        "doc_to_choice": ["no", "yes"],
    },
    "smoke_cb": {
        "doc_to_text": "{{premise}}\nQuestion: {{hypothesis}}. True, False, or Neither?\nAnswer:",
        "doc_to_choice": ["True", "False", "Neither"],
    },
    "smoke_copa": {
        # lm-eval's COPA prompt: premise without its period, joined by "because"/"therefore".
        "doc_to_text": "{{premise.strip()[:-1]}} {{'because' if question == 'cause' else 'therefore'}}",
        "doc_to_choice": "{{[' ' + choice1[0].lower() + choice1[1:], ' ' + choice2[0].lower() + choice2[1:]]}}",
    },
}


def write_smoke_items(private_dir: Path, per_task: int = 100, seed: int = 1234) -> None:
    """Generate the smoke BoolQ/CB/COPA items into private_dir/superglue_smoke/<task>.jsonl."""
    rng = random.Random(seed)
    folder = Path(private_dir) / "superglue_smoke"
    folder.mkdir(parents=True, exist_ok=True)
    makers = {"smoke_boolq": _boolq_item, "smoke_cb": _cb_item, "smoke_copa": _copa_item}
    for task, make in makers.items():
        with open(folder / f"{task}.jsonl", "w", encoding="utf-8") as out:
            for index in range(per_task):
                out.write(json.dumps({"idx": index, **make(rng)}) + "\n")


def write_smoke_task_yaml(private_dir: Path, task_dir: Path) -> Path:
    """Write lm-eval YAML tasks over the generated items; return the folder to include."""
    for task, prompt in TASK_YAML.items():
        data_file = Path(private_dir) / "superglue_smoke" / f"{task}.jsonl"
        write_task_yaml(task_dir, task, data_file, prompt, tag="superglue-smoke")
    return task_dir


def score_superglue(model_dir: Path, ctx: ScoreContext) -> Score:
    """Mean accuracy over SuperGLUE tasks (the smoke set on the smoke preset)."""
    if ctx.preset == "smoke":
        include = write_smoke_task_yaml(ctx.private_dir, ctx.scratch_dir / "lm_eval_tasks")
        output = evaluate_tasks(model_dir, SMOKE_TASKS, ctx.device, include_path=include, batch_size=16)
    else:
        output = evaluate_tasks(model_dir, FULL_TASKS, ctx.device, batch_size=16)
    mean, per_task = mean_primary_metric(output.results)
    return Score(mean, {"per_task": per_task, "tasks": sorted(per_task)}, items=primary_items(output))


def _boolq_item(rng: random.Random) -> dict:
    name, thing = rng.choice(NAMES), rng.choice(THINGS)
    count, asked = rng.randint(2, 20), rng.randint(2, 20)
    passage = f"{name} has {count} {thing}. {name} keeps them in a box by the window."
    return {"passage": passage, "question": f"does {name.lower()} have more than {asked} {thing}",
            "label": int(count > asked)}


def _cb_item(rng: random.Random) -> dict:
    name, obj = rng.choice(NAMES), rng.choice(OBJECTS)
    color, other = rng.sample(COLORS, 2)
    premise = f"{name} said that the {obj} was {color}."
    label = rng.randrange(3)
    hypothesis = [f"the {obj} was {color}", f"the {obj} was {other}", f"{name} liked the {obj}"][label]
    return {"premise": premise, "hypothesis": hypothesis, "label": label}


def _copa_item(rng: random.Random) -> dict:
    premise, question, right, wrong = rng.choice(COPA_FACTS)
    label = rng.randrange(2)
    choices = (right, wrong) if label == 0 else (wrong, right)
    return {"premise": premise, "question": question, "choice1": choices[0], "choice2": choices[1], "label": label}
