"""Autoformalization baseline: a seq2seq fine-tune (T5 family) from natural language to Lean 4 statements.

    python baseline/seq2seq.py --data DATA_DIR --out SUBMISSION_DIR --budget-s SECONDS

Fine-tunes data/base_model on data/train.jsonl (the header and statement as target) with AdamW, warmup and
cosine decay over the budget, checkpoints every few minutes and on SIGTERM (resumed on a rerun), then
translates data/test.jsonl greedily into SUBMISSION_DIR/predictions.jsonl and saves the model beside it.
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
from challenges.lib.generation import generate_texts  # noqa: E402
from challenges.lib.lm_tasks import write_jsonl  # noqa: E402
from challenges.lib.recipe_io import publishing, recipe_parser  # noqa: E402

log = logging.getLogger("math_autoformalization.baseline")
PREFIX = "Lean 4: "


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = recipe_parser(__doc__)
    parser.add_argument("--lr", type=float, help="default: 3e-4 (1e-3 for a model trained from scratch)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--max-new-tokens", type=int, default=128, help="longest statement generated")
    parser.add_argument("--checkpoint-every-s", type=float, default=300.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
    args = parse_args(argv)
    started = time.monotonic()
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    meta = json.loads((args.data / "meta.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(args.data / "base_model")
    model = AutoModelForSeq2SeqLM.from_pretrained(args.data / "base_model", dtype=torch.float32).to(device)
    rows = [json.loads(line) for line in (args.data / "train.jsonl").read_text().splitlines() if line.strip()]
    test = [json.loads(line) for line in (args.data / "test.jsonl").read_text().splitlines() if line.strip()]
    order = list(range(len(rows)))
    random.Random(0).shuffle(order)

    def loss_at(step: int) -> torch.Tensor:
        picks = [rows[order[(step * args.batch_size + i) % len(order)]] for i in range(args.batch_size)]
        inputs = tokenizer([PREFIX + r["nl_statement"] for r in picks], return_tensors="pt", padding=True,
                           truncation=True, max_length=args.max_length)
        targets = tokenizer([r["formal_statement"] for r in picks], return_tensors="pt", padding=True,
                            truncation=True, max_length=args.max_length)["input_ids"]
        labels = targets.masked_fill(targets == tokenizer.pad_token_id, -100)
        return model(**inputs.to(device), labels=labels.to(device)).loss

    # Keep a fifth of the budget (at least 10 s) to translate the test set and save.
    deadline = started + args.budget_s - max(10.0, 0.2 * args.budget_s)
    lr = args.lr or (1e-3 if "smoke stand-in" in meta.get("base_model", "") else 3e-4)
    ckpt_dir = args.out.with_name(args.out.name + "-checkpoints")
    result = train_until(loss_at, trainable_state(model.named_parameters()), ckpt_dir, deadline, lr,
                         every_s=args.checkpoint_every_s)
    outputs = generate_texts(args.data / "base_model", [PREFIX + r["nl_statement"] for r in test], device,
                             max_new_tokens=args.max_new_tokens, seq2seq=True, batch_size=16, model=model,
                             tokenizer=tokenizer)
    summary = {"steps": result.steps, "train_loss": result.loss, "train_pairs": len(rows), "test_items": len(test),
               "stopped_by_signal": result.stopped_by_signal}
    with publishing(args.out) as staging:
        write_jsonl(staging / "predictions.jsonl",
                    ({"id": row["id"], "formal_statement": text} for row, text in zip(test, outputs, strict=True)))
        model.save_pretrained(staging / "model", safe_serialization=True)
        tokenizer.save_pretrained(staging / "model")
        (staging / "training_summary.json").write_text(json.dumps(summary, indent=2))
    log.info("summary: %s", json.dumps(summary))
    return 143 if result.stopped_by_signal else 0


if __name__ == "__main__":
    sys.exit(main())
