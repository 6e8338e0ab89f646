"""LLM efficiency baseline: a LoRA fine-tune (peft) of the base model on the instruction data.

    python baseline/lora.py --data DATA_DIR --out MODEL_DIR --budget-s SECONDS

LoRA on every linear layer, loss on the response tokens only, AdamW with warmup and a cosine decay over
the time budget; bf16 and gradient checkpointing on a GPU (without it, a 7B model's activations for a batch
of 8 x 512 tokens alone would take more than the 40 GB the full preset allows). The adapter (only) is
checkpointed every few minutes and on SIGTERM, and a rerun with the same --out resumes from it. At the end the
adapter is merged into the base weights.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # on a shared CPU, idle OpenMP threads yield instead of spinning

import torch  # noqa: E402

from challenges.lib.finetune import train_until, trainable_state  # noqa: E402
from challenges.lib.recipe_io import publishing, recipe_parser  # noqa: E402

log = logging.getLogger("llm_efficiency.baseline")
PROMPT = "### Instruction:\n{instruction}\n\n{context}### Response:\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = recipe_parser(__doc__)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction,
                        help="recompute activations in the backward pass (default: on a GPU)")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--checkpoint-every-s", type=float, default=300.0)
    return parser.parse_args(argv)


def encode(tokenizer, row: dict[str, str], max_length: int) -> tuple[list[int], list[int]]:
    """Token ids and labels, the prompt's labels masked out (-100) so that the loss is on the response."""
    context = f"### Input:\n{row['context']}\n\n" if row.get("context") else ""
    prompt = tokenizer(PROMPT.format(instruction=row["instruction"], context=context))["input_ids"]
    answer = tokenizer(row["response"])["input_ids"] + [tokenizer.eos_token_id]
    ids = (prompt + answer)[:max_length]
    labels = ([-100] * len(prompt) + answer)[:max_length]
    return ids, labels


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id)
    labels = torch.full((len(examples), width), -100)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (tokens, targets) in enumerate(examples):
        ids[row, : len(tokens)] = torch.tensor(tokens)
        labels[row, : len(targets)] = torch.tensor(targets)
        mask[row, : len(tokens)] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    started = time.monotonic()
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(args.data / "base_model")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    base = AutoModelForCausalLM.from_pretrained(args.data / "base_model", dtype=dtype).to(device)
    if args.gradient_checkpointing if args.gradient_checkpointing is not None else device == "cuda":
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()  # the frozen embeddings' output must carry gradients to the adapters
    model = get_peft_model(base, LoraConfig(r=args.rank, lora_alpha=2 * args.rank, lora_dropout=0.05,
                                            target_modules="all-linear", task_type="CAUSAL_LM"))
    rows = [json.loads(line) for line in (args.data / "train.jsonl").read_text().splitlines() if line.strip()]
    examples = [encode(tokenizer, row, args.max_length) for row in rows]
    order = list(range(len(examples)))
    random.Random(0).shuffle(order)
    batch_size = args.batch_size

    def loss_at(step: int) -> torch.Tensor:
        picks = [examples[order[(step * batch_size + i) % len(order)]] for i in range(batch_size)]
        batch = {k: v.to(device) for k, v in collate(picks, tokenizer.pad_token_id).items()}
        return model(**batch).loss

    # A tenth of the budget (at least 20 s) is kept to merge and save.
    deadline = started + args.budget_s - max(20.0, 0.1 * args.budget_s)
    ckpt_dir = args.out.with_name(args.out.name + "-checkpoints")
    result = train_until(loss_at, trainable_state(model.named_parameters()), ckpt_dir, deadline, args.lr,
                         every_s=args.checkpoint_every_s)
    merged = model.merge_and_unload()
    with publishing(args.out) as staging:
        merged.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
    summary = {"steps": result.steps, "train_loss": result.loss, "examples": len(examples), "rank": args.rank,
               "stopped_by_signal": result.stopped_by_signal}
    (args.out / "training_summary.json").write_text(json.dumps(summary, indent=2))
    log.info("summary: %s", json.dumps(summary))
    return 143 if result.stopped_by_signal else 0


if __name__ == "__main__":
    sys.exit(main())
