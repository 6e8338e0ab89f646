"""LLM merging data: the experts (hub ids, or tiny Qwen2-shaped ones on smoke) and the evaluation items."""

from smoke_experts import SMOKE_EXPERTS, make_smoke_experts, xsum_smoke_items

from challenges import ScoreContext
from challenges.lib.hub import fetch_hub_model, load_hub_dataset
from challenges.lib.lm_tasks import write_jsonl
from challenges.lib.mcq import prefetch, write_smoke_items
from challenges.lib.tokens import write_meta

EXPERTS = {
    "full": ["Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct"],
    "mini": ["Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct"],
}
XSUM = ("EdinburghNLP/xsum", "validation")
XSUM_ITEMS = 200
MAX_PARAMETERS = 8_000_000_000


def prepare(ctx: ScoreContext) -> None:
    experts = ctx.data_dir / "experts"
    if ctx.preset == "smoke":
        make_smoke_experts(experts, ctx.scratch_dir)
        write_smoke_items(ctx.private_dir, "mmlu")
        write_smoke_items(ctx.private_dir, "cosmosqa")
        write_jsonl(ctx.private_dir / "xsum.jsonl", xsum_smoke_items())
        ids = list(SMOKE_EXPERTS)
    else:
        ids = EXPERTS[ctx.preset]
        for model_id in ids:
            fetch_hub_model(model_id, experts / model_id.replace("/", "__"))
        prefetch(ctx.private_dir, "mmlu")
        prefetch(ctx.private_dir, "cosmosqa")
        rows = load_hub_dataset(XSUM[0], split=XSUM[1])
        write_jsonl(ctx.private_dir / "xsum.jsonl", ({"document": r["document"], "summary": r["summary"]}
                                                    for r in rows.select(range(min(XSUM_ITEMS, len(rows))))))
    write_meta(ctx.data_dir, preset=ctx.preset, experts={model_id.replace("/", "__"): model_id for model_id in ids},
               max_parameters=MAX_PARAMETERS)
