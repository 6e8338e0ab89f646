"""Tiny compatible experts for the smoke preset: one random Qwen2-shaped init, each trained briefly on its own
generated domain, so that merging them is a real (if small) merge."""

from __future__ import annotations

import random
from pathlib import Path

from challenges.lib.mcq import smoke_items
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm

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


def _domain_texts() -> dict[str, list[str]]:
    mmlu = smoke_items("mmlu", count=200, seed=101)
    cosmos = smoke_items("cosmosqa", count=200, seed=102)["smoke_cosmosqa"]
    return {
        "math_expert": [f"{i['question']} Answer: {i['choices'][i['answer']]}" for v in mmlu.values() for i in v],
        "story_expert": [f"{i['input']} {i['target']}" for i in cosmos],
        "summary_expert": [f"{i['input']}\nSummary: {i['target']}" for i in xsum_smoke_items(200, seed=103)],
    }


SMOKE_EXPERTS = {name: f"tiny-random-qwen2 trained on generated {name.split('_')[0]} text"
                 for name in ("math_expert", "story_expert", "summary_expert")}


def make_smoke_experts(out_dir: Path, scratch: Path, steps: int = 30) -> None:
    import torch

    domains = _domain_texts()
    tokenizer = smoke_tokenizer(scratch / "tokenizer", extra_texts=[t for v in domains.values() for t in v])
    tokenizer.pad_token = tokenizer.eos_token  # padding for the training batches; masked out of the loss
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only contend for a shared CPU
    try:
        for index, (name, texts) in enumerate(domains.items()):
            model = tiny_causal_lm("qwen2", len(tokenizer), tokenizer.eos_token_id, seed=0)  # one shared init
            optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
            rng = random.Random(index)
            for _ in range(steps):
                batch = tokenizer(rng.sample(texts, 16), return_tensors="pt", padding=True, truncation=True,
                                  max_length=96)
                labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
                loss = model(**batch, labels=labels).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
            save_model(model, tokenizer, out_dir / name)
    finally:
        torch.set_num_threads(threads)
