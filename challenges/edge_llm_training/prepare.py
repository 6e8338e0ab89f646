"""Edge LLM training data: MLRB's C4 and Alpaca sets (hub) or docstrings and generated instructions (smoke)."""

from itertools import chain, islice

from challenges import ScoreContext
from challenges.lib.bits_per_byte import carve_heldout, write_heldout_texts
from challenges.lib.hub import HubDataset, Sources, fetch_dataset
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.mcq import smoke_items
from challenges.lib.model_checks import GIB
from challenges.lib.pretraining import docstring_splits, parquet_texts, write_pretraining_data
from challenges.lib.superglue import FULL_TASKS, write_smoke_items

# MLRB's training data: C4 (989k documents, train only) and Alpaca (cleaned, 52k instructions).
EDGE_DATA = HubDataset("AlgorithmicResearchGroup/edge_llm_training",
                       files=("c4_combined_dataset/train-*.parquet", "alpaca_cleaned/train-*.parquet"))
SOURCES = {preset: Sources(datasets=(EDGE_DATA,), lm_eval_tasks=tuple(FULL_TASKS)) for preset in ("full", "mini")}
MEMORY_LIMIT_BYTES = {"full": GIB, "mini": GIB, "smoke": 32 << 20}
PARAMETER_SHARE = 0.7  # of limit / 4 bytes: room for embeddings beyond the recipe's non-embedding count
TOKENIZER_SAMPLE_DOCS = 200_000
ALPACA_TEMPLATE = ("Below is an instruction that describes a task. Write a response that appropriately completes "
                   "the request.\n\n### Instruction:\n{instruction}\n\n{input}### Response:\n{output}")


def prepare(ctx: ScoreContext) -> None:
    if ctx.preset == "smoke":
        docs = docstring_splits(extra=smoke_alpaca())
        write_heldout_texts(ctx.private_dir, carve_heldout(docs))  # the smoke preset's proxy score
        splits, tokenizer_texts = docs, docs["train"]
        sources = ["python-stdlib-docstrings", "generated instructions"]
        write_smoke_items(ctx.private_dir)
    else:
        files = fetch_dataset(EDGE_DATA, ctx.scratch_dir / "edge")
        c4 = parquet_texts([f for f in files if f.parent.name == "c4_combined_dataset"], "text")
        alpaca = parquet_texts([f for f in files if f.parent.name == "alpaca_cleaned"],
                               columns=["instruction", "input", "output"], extract=lambda row: [alpaca_text(row)])
        splits = {split: chain(c4(split), alpaca(split)) for split in ("train", "validation")}
        tokenizer_texts = islice(chain(c4("train"), alpaca("train")), TOKENIZER_SAMPLE_DOCS)
        sources = [f"{EDGE_DATA.repo} (c4_combined_dataset, alpaca_cleaned)"]
        prefetch_tasks(FULL_TASKS)
    limit = MEMORY_LIMIT_BYTES[ctx.preset]
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096 if ctx.preset == "smoke" else 32768,
                           tokenizer_texts=tokenizer_texts, dataset=sources, preset=ctx.preset,
                           memory_limit_bytes=limit, max_params=int(PARAMETER_SHARE * limit / 4))


def alpaca_text(row: dict) -> str:
    """An Alpaca row as one training text, in Alpaca's own prompt format."""
    extra = f"### Input:\n{row['input']}\n\n" if row.get("input") else ""
    return ALPACA_TEMPLATE.format(instruction=row["instruction"], input=extra, output=row["output"])


def smoke_alpaca() -> list[str]:
    """Alpaca-format instruction texts from generated questions."""
    items = [i for group in smoke_items("mmlu", count=300, seed=5).values() for i in group]
    return [alpaca_text({"instruction": i["question"], "input": "", "output": i["choices"][i["answer"]]})
            for i in items]
