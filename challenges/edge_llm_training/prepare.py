"""Edge LLM training data: a C4 shard and Alpaca (hub) or docstrings and generated instructions (smoke)."""

from challenges import ScoreContext
from challenges.lib.hub import load_hub_dataset
from challenges.lib.mcq import smoke_items
from challenges.lib.model_checks import GIB
from challenges.lib.pretraining import docstring_splits, write_pretraining_data
from challenges.lib.superglue import prefetch_hub_tasks, write_smoke_items

C4 = ("allenai/c4", {"train": "en/c4-train.00000-of-01024.json.gz",
                     "validation": "en/c4-validation.00000-of-00008.json.gz"})
ALPACA = "tatsu-lab/alpaca"
MEMORY_LIMIT_BYTES = {"full": GIB, "mini": GIB, "smoke": 32 << 20}
PARAMETER_SHARE = 0.7  # of limit / 4 bytes: room for embeddings beyond the recipe's non-embedding count


def prepare(ctx: ScoreContext) -> None:
    if ctx.preset == "smoke":
        splits = docstring_splits(extra=smoke_alpaca())
        sources = ["python-stdlib-docstrings", "generated instructions"]
        write_smoke_items(ctx.private_dir)
    else:
        c4 = load_hub_dataset(C4[0], data_files=C4[1])
        alpaca = load_hub_dataset(ALPACA, split="train")
        splits = {"train": [*c4["train"]["text"], *alpaca["text"]], "validation": list(c4["validation"]["text"])}
        sources = [f"{C4[0]} ({C4[1]['train']})", ALPACA]
        prefetch_hub_tasks()
    limit = MEMORY_LIMIT_BYTES[ctx.preset]
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096 if ctx.preset == "smoke" else 32768,
                           tokenizer_texts=splits["train"][:200_000], dataset=sources, preset=ctx.preset,
                           memory_limit_bytes=limit, max_params=int(PARAMETER_SHARE * limit / 4))


def smoke_alpaca() -> list[str]:
    """Alpaca-format instruction texts from generated questions."""
    items = [i for group in smoke_items("mmlu", count=300, seed=5).values() for i in group]
    return [f"Below is an instruction that describes a task. Write a response that appropriately completes the "
            f"request.\n\n### Instruction:\n{i['question']}\n\n### Response:\n{i['choices'][i['answer']]}"
            for i in items]
