"""Held-out bits per byte: the smoke presets' proxy for pretraining challenges.

A model trained for a minute on CPU answers SuperGLUE or BLiMP items at chance whatever its recipe, so the smoke
presets of the pretraining challenges score how well the model predicts text it never saw instead: documents of
the same corpus held out in private_dir, in bits per UTF-8 byte (lower is better; comparable across tokenizers).
It moves with every better recipe, which is what a crew trying its loop on a laptop needs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from challenges.framework.api import Score, ScoreContext

HELDOUT_FILE = "heldout_texts.jsonl"
HELDOUT_DOCS = 200
MAX_CHARS = 400  # per document: scoring stays a few seconds on CPU


def write_heldout_texts(private_dir: Path, texts: list[str], count: int = HELDOUT_DOCS,
                        prompts: list[str] | None = None) -> None:
    """The held-out documents (none of them in the data agents see), cut to MAX_CHARS. With `prompts`, each
    text is scored as the continuation of its prompt (an instruction's response after its instruction)."""
    with open(Path(private_dir) / HELDOUT_FILE, "w", encoding="utf-8") as out:
        for index, text in enumerate(texts[:count]):
            doc = {"id": f"doc{index:04d}", "text": text[:MAX_CHARS]}
            if prompts is not None:
                doc["prompt"] = prompts[index]
            out.write(json.dumps(doc) + "\n")


def carve_heldout(splits: dict[str, list[str]], count: int = HELDOUT_DOCS) -> list[str]:
    """Take every other validation document (at most `count`) out of the split agents see, for the held-out set."""
    validation = splits["validation"]
    heldout, splits["validation"] = validation[::2][:count], validation[1::2] + validation[::2][count:]
    return heldout


def score_bits_per_byte(model_dir: Path, ctx: ScoreContext) -> Score:
    """Mean over held-out documents of each one's bits per byte under the model (each document starts after
    the end-of-text token that separates documents in training); per-document values are the items."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    docs = [json.loads(line) for line in (ctx.private_dir / HELDOUT_FILE).read_text(encoding="utf-8").splitlines()]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).to(ctx.device).eval()
    context = getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", 1024)
    start = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.bos_token_id
    items: dict[str, float] = {}
    with torch.no_grad():
        for doc in docs:
            prefix = tokenizer(doc["prompt"])["input_ids"] if "prompt" in doc else [start]
            ids = tokenizer(doc["text"], add_special_tokens=False)["input_ids"][: context - len(prefix)]
            if not ids:
                continue
            text_bytes = len(tokenizer.decode(ids).encode("utf-8"))
            inputs = torch.tensor([[*prefix, *ids]], device=ctx.device)
            logits = model(inputs).logits[0, len(prefix) - 1:-1].float()  # the predictions of the text's tokens
            nats = torch.nn.functional.cross_entropy(logits, inputs[0, len(prefix):], reduction="sum").item()
            items[doc["id"]] = nats / math.log(2) / max(1, text_bytes)
    value = sum(items.values()) / len(items)
    return Score(value, {"documents": len(items), "proxy": "held-out bits per byte"}, items={"heldout_text": items})
