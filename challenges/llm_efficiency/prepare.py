"""LLM efficiency data: the base model (an approved one, or a tiny Pythia-shaped one on smoke) and open
instruction data (dolly-15k, or generated instructions on smoke).

The base model is an ungated model from the challenge's approved families. To use another approved one, copy
this folder to a folder on RESEARCH_CREW_CHALLENGE_PATH (it then overrides the built-in challenge of the same
name), change BASE_MODELS below, and run `research-crew doctor llm_efficiency`: the edited folder is prepared
afresh, and doctor checks that the model exists, is reachable and fits.
"""

import random

from challenges import ScoreContext
from challenges.lib.bits_per_byte import write_heldout_texts
from challenges.lib.hub import HubDataset, HubModel, Sources, fetch_dataset, fetch_model, read_rows
from challenges.lib.lm_eval_scoring import prefetch_tasks
from challenges.lib.lm_tasks import write_jsonl
from challenges.lib.mcq import HUB_TASKS, smoke_items, write_smoke_items
from challenges.lib.model_checks import stored_parameters
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm
from challenges.lib.tokens import write_meta

# Ungated: Qwen1.5 (Qwen license, no access request) and Pythia (Apache 2.0).
BASE_MODELS = {"full": HubModel("Qwen/Qwen1.5-7B"), "mini": HubModel("EleutherAI/pythia-410m")}
# The challenge's approved base model families (NeurIPS 2023 LLM Efficiency Challenge, as MLRB lists them).
APPROVED = ["ALBERT", "BART", "BERT", "Bloom", "Cerebras-GPT", "Falcon", "DeBERTa", "GPT2", "GPT-Neo, GPT-J, GPT-NeoX",
            "LLaMA 2", "Mistral", "MPT", "OpenLLaMA", "OPT", "Persimmon", "Pythia", "Qwen", "RedPajama-INCITE",
            "RoBERTa", "T5", "UL2"]
# The baseline recipe's prompt (baseline/lora.py) for an instruction without context.
INSTRUCTION_PROMPT = "### Instruction:\n{instruction}\n\n### Response:\n"
DOLLY = HubDataset("databricks/databricks-dolly-15k", revision="refs/convert/parquet",
                   files=("default/train/*.parquet",))
SOURCES = {preset: Sources(models=(model,), datasets=(DOLLY,), lm_eval_tasks=(HUB_TASKS["mmlu"],))
           for preset, model in BASE_MODELS.items()}


def prepare(ctx: ScoreContext) -> None:
    base = ctx.data_dir / "base_model"
    if ctx.preset == "smoke":
        rows = smoke_instructions()
        tokenizer = smoke_tokenizer(ctx.scratch_dir / "tokenizer", extra_texts=[r["response"] for r in rows])
        save_model(tiny_causal_lm("gpt_neox", len(tokenizer), tokenizer.eos_token_id), tokenizer, base)
        write_smoke_items(ctx.private_dir, "mmlu")
        heldout = smoke_instructions(200, seed=123)  # the smoke preset's proxy score: held-out responses
        write_heldout_texts(ctx.private_dir, [r["response"] for r in heldout],
                            prompts=[INSTRUCTION_PROMPT.format(instruction=r["instruction"]) for r in heldout])
        model_id, data_id = "tiny-random-pythia (smoke stand-in)", "generated instructions"
    else:
        model_id, data_id = BASE_MODELS[ctx.preset].repo, DOLLY.repo
        fetch_model(BASE_MODELS[ctx.preset], base)
        rows = list(read_rows(fetch_dataset(DOLLY, ctx.scratch_dir / "dolly"), ["instruction", "context", "response"]))
        prefetch_tasks([HUB_TASKS["mmlu"]])
    count = write_jsonl(ctx.data_dir / "train.jsonl", rows)
    write_meta(ctx.data_dir, base_model=model_id, approved_base_models=APPROVED, train_data=data_id,
               train_examples=count, base_parameters=stored_parameters(base), preset=ctx.preset)


def smoke_instructions(count: int = 600, seed: int = 99) -> list[dict[str, str]]:
    """Arithmetic and counting instructions (a different seed from the scored items)."""
    rng = random.Random(11)
    rows = []
    for items in smoke_items("mmlu", count=count // 2, seed=seed).values():
        for item in items:
            rows.append({"instruction": item["question"], "context": "",
                         "response": f"The answer is {item['choices'][item['answer']]}."})
    rng.shuffle(rows)
    return rows
