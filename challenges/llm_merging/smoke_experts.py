"""Tiny compatible experts for the smoke preset: one random Qwen2-shaped init, each trained briefly on its own
generated domain, so that merging them is a real (if small) merge."""

from __future__ import annotations

import random
from pathlib import Path

from challenges.lib.mcq import smoke_items
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm, train_briefly

NAMES = ["Ada", "Ben", "Chen", "Dara", "Eli", "Fay"]
THINGS = ["apples", "books", "kites", "shells", "maps"]
PLACES = ["market", "school", "beach", "library", "park"]


def xsum_smoke_items(count: int = 24, seed: int = 3) -> list[dict[str, str]]:
    """Short generated articles (`input`) with a one-sentence summary (`target`), as in MLRB's XSum set."""
    rng = random.Random(seed)
    items = []
    for _ in range(count):
        name, thing, place = rng.choice(NAMES), rng.choice(THINGS), rng.choice(PLACES)
        n = rng.randint(2, 9)
        document = (f"On Monday {name} went to the {place}. There {name} bought {n} {thing}. "
                    f"Later {name} walked home and put the {thing} on the table.")
        items.append({"input": document, "target": f"{name} bought {n} {thing} at the {place}."})
    return items


def _domain_texts(count: int = 200, seed: int = 101) -> dict[str, list[str]]:
    mmlu = smoke_items("mmlu", count=count, seed=seed)
    cosmos = smoke_items("cosmosqa", count=count, seed=seed + 1)["smoke_cosmosqa"]
    return {
        "math_expert": [f"{i['question']} Answer: {i['choices'][i['answer']]}" for v in mmlu.values() for i in v],
        "story_expert": [f"{i['input']} {i['target']}" for i in cosmos],
        "summary_expert": [f"{i['input']}\nSummary: {i['target']}" for i in xsum_smoke_items(count, seed=seed + 2)],
    }


def heldout_domain_texts(per_domain: int = 40) -> list[str]:
    """Texts of every expert's domain, generated with other seeds than the experts trained on: the smoke
    preset's proxy score is the merged model's bits per byte on them (a good merge keeps every domain)."""
    return [t for texts in _domain_texts(per_domain, seed=901).values() for t in texts[:per_domain]]


SMOKE_EXPERTS = {name: f"tiny-random-qwen2 trained on generated {name.split('_')[0]} text"
                 for name in ("math_expert", "story_expert", "summary_expert")}


def make_smoke_experts(out_dir: Path, scratch: Path, steps: int = 30) -> None:
    domains = _domain_texts()
    tokenizer = smoke_tokenizer(scratch / "tokenizer", extra_texts=[t for v in domains.values() for t in v])
    for index, (name, texts) in enumerate(domains.items()):
        model = tiny_causal_lm("qwen2", len(tokenizer), tokenizer.eos_token_id, seed=0)  # one shared init
        train_briefly(model, tokenizer, texts, steps, seed=index)
        save_model(model, tokenizer, out_dir / name)
