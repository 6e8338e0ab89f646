"""Edge LLM compression data: the base model (phi-2, or a tiny phi-2-shaped one on smoke) and MMLU items."""

from challenges import ScoreContext
from challenges.lib.bits_per_byte import carve_heldout, write_heldout_texts
from challenges.lib.hub import HubModel, Sources, fetch_model
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.mcq import HUB_TASKS, write_smoke_items
from challenges.lib.model_checks import GIB, stored_parameters
from challenges.lib.pretraining import docstring_splits
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm, train_briefly
from challenges.lib.tokens import write_meta

BASE_MODEL = HubModel("microsoft/phi-2")
SOURCES = {preset: Sources(models=(BASE_MODEL,), lm_eval_tasks=(HUB_TASKS["mmlu"],)) for preset in ("full", "mini")}
MEMORY_LIMIT_BYTES = 12 * GIB
SMOKE_LIMIT_SHARE = 0.75  # of the tiny model's float32 size: float16 fits, as phi-2 in float16 fits 12 GiB
# The smoke base model is trained briefly on the docstring corpus, so that what compression takes away shows in
# its held-out bits per byte (a random model predicts text equally badly however it is pruned).
SMOKE_TRAINING_STEPS = 60


def prepare(ctx: ScoreContext) -> None:
    base = ctx.data_dir / "base_model"
    if ctx.preset == "smoke":
        splits = docstring_splits()
        write_heldout_texts(ctx.private_dir, carve_heldout(splits))  # the smoke preset's proxy score
        tokenizer = smoke_tokenizer(ctx.scratch_dir / "tokenizer")
        model = tiny_causal_lm("phi", len(tokenizer), tokenizer.eos_token_id, layers=6)
        train_briefly(model, tokenizer, splits["train"], SMOKE_TRAINING_STEPS)
        save_model(model, tokenizer, base)
        write_smoke_items(ctx.private_dir, "mmlu")
        model_id = "tiny phi trained briefly on stdlib docstrings (smoke stand-in for microsoft/phi-2)"
    else:
        fetch_model(BASE_MODEL, base)
        prefetch_tasks([HUB_TASKS["mmlu"]])
        model_id = BASE_MODEL.repo
    parameters = stored_parameters(base)
    limit = int(SMOKE_LIMIT_SHARE * 4 * parameters) if ctx.preset == "smoke" else MEMORY_LIMIT_BYTES
    write_meta(ctx.data_dir, base_model=model_id, preset=ctx.preset, base_parameters=parameters,
               memory_limit_bytes=limit, allowed_dtypes=["float16", "float32"])
