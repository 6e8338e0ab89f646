"""LLM merging data: the experts (hub models, or tiny Qwen2-shaped ones on smoke) and the evaluation items.

CosmosQA and XSum items come from MLRB's `AlgorithmicResearchGroup/llm_merging` set (500 and 200 items): a
fifth of each is visible in data/validation/ (MLRB hands them to participants as validation data), the
rest is scored. MMLU is lm-eval's own task.
"""

from smoke_experts import SMOKE_EXPERTS, heldout_domain_texts, make_smoke_experts, xsum_smoke_items

from challenges import ScoreContext
from challenges.lib.bits_per_byte import write_heldout_texts
from challenges.lib.corpus import split_of
from challenges.lib.hub import HubDataset, HubModel, Sources, fetch_dataset, fetch_model, read_rows
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.lm_tasks import write_jsonl
from challenges.lib.mcq import HUB_TASKS, smoke_items, write_smoke_items
from challenges.lib.tokens import write_meta

MAX_PARAMETERS = 8_000_000_000
UPLOADED_BEFORE = "2024-05-31"  # MLRB: models available on the hub before this day, of at most 8B parameters


def _experts(*repos: str) -> tuple[HubModel, ...]:
    return tuple(HubModel(r, uploaded_before=UPLOADED_BEFORE, max_parameters=MAX_PARAMETERS) for r in repos)


# Qwen1.5 base and chat (February 2024, ungated): one architecture, so they merge tensor by tensor.
EXPERTS = {"full": _experts("Qwen/Qwen1.5-7B", "Qwen/Qwen1.5-7B-Chat"),
           "mini": _experts("Qwen/Qwen1.5-0.5B", "Qwen/Qwen1.5-0.5B-Chat")}
EVAL_SETS = HubDataset("AlgorithmicResearchGroup/llm_merging",
                       files=("cosmos_qa/train-*.parquet", "xsum/train-*.parquet"))
SOURCES = {preset: Sources(models=experts, datasets=(EVAL_SETS,), lm_eval_tasks=(HUB_TASKS["mmlu"],))
           for preset, experts in EXPERTS.items()}
VISIBLE_SHARE = 0.2


def prepare(ctx: ScoreContext) -> None:
    experts = ctx.data_dir / "experts"
    if ctx.preset == "smoke":
        make_smoke_experts(experts, ctx.scratch_dir)
        write_smoke_items(ctx.private_dir, "mmlu")
        write_heldout_texts(ctx.private_dir, heldout_domain_texts())  # the smoke preset's proxy score
        cosmos, xsum = smoke_items("cosmosqa", count=100)["smoke_cosmosqa"], xsum_smoke_items(30)
        ids = dict(SMOKE_EXPERTS)
    else:
        ids = {}
        for model in EXPERTS[ctx.preset]:
            name = model.repo.replace("/", "__")
            fetch_model(model, experts / name)
            ids[name] = model.repo
        files = fetch_dataset(EVAL_SETS, ctx.scratch_dir / "eval_sets")
        cosmos = list(read_rows([f for f in files if f.parent.name == "cosmos_qa"]))
        xsum = list(read_rows([f for f in files if f.parent.name == "xsum"]))
        prefetch_tasks([HUB_TASKS["mmlu"]])
    for name, items in (("cosmosqa", cosmos), ("xsum", xsum)):
        visible = [i for i in items if split_of(i["input"], VISIBLE_SHARE) == "validation"]
        write_jsonl(ctx.data_dir / "validation" / f"{name}.jsonl", visible)
        scored = [i for i in items if split_of(i["input"], VISIBLE_SHARE) != "validation"]
        write_jsonl(ctx.private_dir / ("cosmosqa/cosmosqa.jsonl" if name == "cosmosqa" else "xsum.jsonl"), scored)
    write_meta(ctx.data_dir, preset=ctx.preset, experts=ids, max_parameters=MAX_PARAMETERS,
               uploaded_before=UPLOADED_BEFORE, eval_sets=EVAL_SETS.repo if ctx.preset != "smoke" else "generated")
