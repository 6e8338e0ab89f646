"""Autoformalization data: ProofNet# (Lean 4) from the hub, or generated core-Lean pairs on smoke.

Visible: train.jsonl (statement pairs) and test.jsonl (natural language only); private: the test references.
"""

from lean_smoke import smoke_pairs

from challenges import ScoreContext
from challenges.lib.hub import HubDataset, HubModel, Sources, fetch_dataset, fetch_model, read_rows
from challenges.lib.lm_tasks import write_jsonl
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_seq2seq
from challenges.lib.tokens import write_meta

# ProofNet ported to Lean 4: valid (185) and test (186) splits, parquet.
PROOFNET = HubDataset("PAug/ProofNetSharp", files=("data/valid-*.parquet", "data/test-*.parquet"))
BASE_MODEL = HubModel("google/byt5-small")  # bytes in, bytes out: Lean's Unicode needs no vocabulary
SOURCES = {preset: Sources(models=(BASE_MODEL,), datasets=(PROOFNET,)) for preset in ("full", "mini")}
COLUMNS = ["id", "nl_statement", "lean4_src_header", "lean4_formalization"]


def prepare(ctx: ScoreContext) -> None:
    base = ctx.data_dir / "base_model"
    if ctx.preset == "smoke":
        train, test = smoke_pairs(400, seed=1, prefix="train"), smoke_pairs(40, seed=2, prefix="test")
        texts = [r[k] for r in train for k in ("nl_statement", "formal_statement")]
        tokenizer = smoke_tokenizer(ctx.scratch_dir / "tokenizer", extra_texts=texts, special_tokens=("<pad>",))
        save_model(tiny_seq2seq(len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id), tokenizer, base)
        sources = {"dataset": "generated core-Lean pairs", "base_model": "tiny-random-t5 (smoke stand-in)"}
    else:
        files = fetch_dataset(PROOFNET, ctx.scratch_dir / "proofnet")
        train, test = ([_row(r) for r in read_rows([f for f in files if f.name.startswith(f"{split}-")], COLUMNS)]
                       for split in ("valid", "test"))
        fetch_model(BASE_MODEL, base)
        sources = {"dataset": PROOFNET.repo, "base_model": BASE_MODEL.repo}
    write_jsonl(ctx.data_dir / "train.jsonl", train)
    write_jsonl(ctx.data_dir / "test.jsonl", ({k: r[k] for k in ("id", "nl_statement", "header")} for r in test))
    write_jsonl(ctx.private_dir / "references.jsonl", test)
    write_meta(ctx.data_dir, preset=ctx.preset, train_pairs=len(train), test_items=len(test), **sources)


def _row(r: dict) -> dict[str, str]:
    return {"id": r["id"], "nl_statement": r["nl_statement"], "header": r["lean4_src_header"],
            "formal_statement": r["lean4_formalization"]}
