"""LLM efficiency data: the base model (an approved one, or a tiny Pythia-shaped one on smoke) and open
instruction data (dolly-15k, or generated instructions on smoke)."""

import random

from challenges import ScoreContext
from challenges.lib.hub import fetch_hub_model, load_hub_dataset
from challenges.lib.lm_tasks import write_jsonl
from challenges.lib.mcq import prefetch, smoke_items, write_smoke_items
from challenges.lib.model_checks import stored_parameters
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm
from challenges.lib.tokens import write_meta

BASE_MODELS = {"full": "mistralai/Mistral-7B-v0.1", "mini": "EleutherAI/pythia-410m"}
# The challenge's approved base model families (NeurIPS 2023 LLM Efficiency Challenge).
APPROVED = ["ALBERT", "BART", "BERT", "Bloom", "Cerebras-GPT", "Falcon", "DeBERTa", "GPT2", "GPT-Neo, GPT-J, GPT-NeoX",
            "LLaMA 2", "Mistral", "MPT", "OpenLLaMA", "OPT", "Persimmon", "Pythia", "Qwen", "RedPajama-INCITE",
            "RoBERTa", "T5", "UL2"]
TRAIN_DATA = "databricks/databricks-dolly-15k"


def prepare(ctx: ScoreContext) -> None:
    base = ctx.data_dir / "base_model"
    if ctx.preset == "smoke":
        rows = smoke_instructions()
        tokenizer = smoke_tokenizer(ctx.scratch_dir / "tokenizer", extra_texts=[r["response"] for r in rows])
        save_model(tiny_causal_lm("gpt_neox", len(tokenizer), tokenizer.eos_token_id), tokenizer, base)
        write_smoke_items(ctx.private_dir, "mmlu")
        model_id, data_id = "tiny-random-pythia (smoke stand-in)", "generated instructions"
    else:
        model_id, data_id = BASE_MODELS[ctx.preset], TRAIN_DATA
        fetch_hub_model(model_id, base)
        dolly = load_hub_dataset(TRAIN_DATA, split="train")
        rows = [{k: r[k] for k in ("instruction", "context", "response")} for r in dolly]
        prefetch(ctx.private_dir, "mmlu")
    count = write_jsonl(ctx.data_dir / "train.jsonl", rows)
    write_meta(ctx.data_dir, base_model=model_id, approved_base_models=APPROVED, train_data=data_id,
               train_examples=count, base_parameters=stored_parameters(base), preset=ctx.preset)


def smoke_instructions(count: int = 600) -> list[dict[str, str]]:
    """Arithmetic and counting instructions (a different seed from the scored items)."""
    rng = random.Random(11)
    rows = []
    for items in smoke_items("mmlu", count=count // 2, seed=99).values():
        for item in items:
            rows.append({"instruction": item["question"], "context": "",
                         "response": f"The answer is {item['choices'][item['answer']]}."})
    rng.shuffle(rows)
    return rows
