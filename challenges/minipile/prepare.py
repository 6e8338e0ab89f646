"""MiniPile data: the hub dataset for full and mini presets, the stdlib docstring corpus for smoke."""

from challenges import ScoreContext
from challenges.lib.hub import load_hub_dataset
from challenges.lib.pretraining import docstring_splits, write_pretraining_data
from challenges.lib.superglue import prefetch_hub_tasks, write_smoke_items
from challenges.lib.tokens import train_tokenizer, write_meta, write_token_file

DATASET_ID = "JeanKaddour/minipile"
# The MLRB mini setting: a GPT-2 of about 30M parameters; the full preset leaves the size to the budget.
MAX_PARAMS = {"mini": 30_000_000}
TOKENIZER_SAMPLE_DOCS = 200_000


def prepare(ctx: ScoreContext) -> None:
    if ctx.preset == "smoke":
        _prepare_smoke(ctx)
    else:
        _prepare_minipile(ctx)


def _prepare_smoke(ctx: ScoreContext) -> None:
    splits = docstring_splits()
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096, dataset="python-stdlib-docstrings",
                           preset=ctx.preset, documents={k: len(v) for k, v in splits.items()}, max_params=2_000_000)
    write_smoke_items(ctx.private_dir)


def _prepare_minipile(ctx: ScoreContext) -> None:
    dataset = load_hub_dataset(DATASET_ID)
    sample = (row["text"] for row in dataset["train"].select(range(min(TOKENIZER_SAMPLE_DOCS,
                                                                          len(dataset["train"])))))
    tokenizer = train_tokenizer(sample, vocab_size=32768, out_dir=ctx.data_dir / "tokenizer")
    counts = {split: write_token_file((row["text"] for row in dataset[split]), tokenizer,
                                      ctx.data_dir / f"{split}.bin")
              for split in ("train", "validation")}
    write_meta(ctx.data_dir, dataset=DATASET_ID, preset=ctx.preset, vocab_size=len(tokenizer), tokens=counts,
               max_params=MAX_PARAMS.get(ctx.preset))
    prefetch_hub_tasks()
