"""BabyLM data: the strict-small text (hub) or stdlib docstrings (smoke), tokenized; BLiMP items."""

from challenges import ScoreContext
from challenges.lib.hub import load_hub_dataset
from challenges.lib.mcq import prefetch, write_smoke_items
from challenges.lib.pretraining import docstring_splits, text_column, write_pretraining_data

DATASET_ID = "AlienKevin/BabyLM_2024_10M"  # BabyLM 2024 strict-small: train (10M words), dev, test
SPLITS = {"train": "train", "validation": "dev"}


def prepare(ctx: ScoreContext) -> None:
    if ctx.preset == "smoke":
        splits, dataset = docstring_splits(), "python-stdlib-docstrings"
        write_smoke_items(ctx.private_dir, "blimp")
    else:
        data = load_hub_dataset(DATASET_ID)
        column = text_column(data["train"])
        splits = {ours: [t for t in data[theirs][column] if t.strip()] for ours, theirs in SPLITS.items()}
        dataset = DATASET_ID
        prefetch(ctx.private_dir, "blimp")
    words = sum(len(text.split()) for text in splits["train"])
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096 if ctx.preset == "smoke" else 16384,
                           dataset=dataset, preset=ctx.preset, train_words=words)
