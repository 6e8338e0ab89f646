"""MiniPile data: MLRB's parquet copy of MiniPile for full and mini presets, the stdlib docstring corpus for smoke."""

from itertools import islice

from challenges import ScoreContext
from challenges.lib.bits_per_byte import carve_heldout, write_heldout_texts
from challenges.lib.hub import HubDataset, Sources, fetch_dataset
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.pretraining import docstring_splits, parquet_texts, write_pretraining_data
from challenges.lib.superglue import FULL_TASKS, write_smoke_items
from challenges.lib.tokens import train_tokenizer, write_meta, write_token_file

MINIPILE = HubDataset("AlgorithmicResearchGroup/minipile", files=("data/train-*.parquet", "data/validation-*.parquet"))
SOURCES = {preset: Sources(datasets=(MINIPILE,), lm_eval_tasks=tuple(FULL_TASKS)) for preset in ("full", "mini")}
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
    write_heldout_texts(ctx.private_dir, carve_heldout(splits))  # the smoke preset's proxy score
    write_pretraining_data(ctx.data_dir, splits, vocab_size=4096, dataset="python-stdlib-docstrings",
                           preset=ctx.preset, documents={k: len(v) for k, v in splits.items()}, max_params=2_000_000)
    write_smoke_items(ctx.private_dir)


def _prepare_minipile(ctx: ScoreContext) -> None:
    texts = parquet_texts(fetch_dataset(MINIPILE, ctx.scratch_dir / "minipile"), "text")
    tokenizer = train_tokenizer(islice(texts("train"), TOKENIZER_SAMPLE_DOCS), vocab_size=32768,
                                out_dir=ctx.data_dir / "tokenizer")
    counts = {split: write_token_file(texts(split), tokenizer, ctx.data_dir / f"{split}.bin")
              for split in ("train", "validation")}
    write_meta(ctx.data_dir, dataset=MINIPILE.repo, preset=ctx.preset, vocab_size=len(tokenizer), tokens=counts,
               max_params=MAX_PARAMS.get(ctx.preset))
    prefetch_tasks(FULL_TASKS)
