"""BabyLM data: the strict-small text (MLRB's set, in the hub's parquet conversion) or stdlib docstrings
(smoke), tokenized; BLiMP through lm-eval."""

from challenges import ScoreContext
from challenges.lib.bits_per_byte import carve_heldout, write_heldout_texts
from challenges.lib.hub import HubDataset, Sources, fetch_dataset
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.mcq import HUB_TASKS, write_smoke_items
from challenges.lib.pretraining import docstring_splits, parquet_texts, write_pretraining_data

# MLRB's BabyLM strict-small: one row per corpus file (`filename`, `content`) in train, dev and test.
BABYLM = HubDataset("AlgorithmicResearchGroup/babylm", revision="refs/convert/parquet",
                    files=("default/train/*.parquet", "default/dev/*.parquet"))
SOURCES = {preset: Sources(datasets=(BABYLM,), lm_eval_tasks=(HUB_TASKS["blimp"],)) for preset in ("full", "mini")}


def prepare(ctx: ScoreContext) -> None:
    if ctx.preset == "smoke":
        splits, dataset = docstring_splits(), "python-stdlib-docstrings"
        write_heldout_texts(ctx.private_dir, carve_heldout(splits))  # the smoke preset's proxy score
        write_smoke_items(ctx.private_dir, "blimp")
    else:
        texts = parquet_texts(fetch_dataset(BABYLM, ctx.scratch_dir / "babylm"), columns=["content"],
                              extract=lambda row: row["content"].splitlines())
        splits, dataset = {"train": list(texts("train")), "validation": list(texts("validation"))}, BABYLM.repo
        prefetch_tasks([HUB_TASKS["blimp"]])
    words = sum(len(text.split()) for text in splits["train"])
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096 if ctx.preset == "smoke" else 16384,
                           dataset=dataset, preset=ctx.preset, train_words=words)
