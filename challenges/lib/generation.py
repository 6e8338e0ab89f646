"""Text generation from a local model folder, and the text-overlap metrics BLEU and ROUGE-L."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def generate_texts(model_dir: Path, prompts: list[str], device: str = "cpu", max_new_tokens: int = 64,
                   seq2seq: bool = False, batch_size: int = 8, model=None, tokenizer=None) -> list[str]:
    """Greedy continuations (causal) or outputs (seq2seq) of each prompt, without the prompt."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = tokenizer or AutoTokenizer.from_pretrained(model_dir)
    if model is None:
        loader = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
        model = loader.from_pretrained(model_dir, dtype="auto").to(device)
    model.eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    # Causal: prompts end where generation starts, and a long one loses its beginning, not its question.
    tokenizer.padding_side = tokenizer.truncation_side = "right" if seq2seq else "left"
    limit = getattr(model.config, "max_position_embeddings", None) or 1024
    outputs: list[str] = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[start:start + batch_size], return_tensors="pt", padding=True, truncation=True,
                          max_length=max(8, limit - max_new_tokens) if not seq2seq else 512).to(device)
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
        new = out if seq2seq else out[:, batch["input_ids"].shape[1]:]
        outputs.extend(text.strip() for text in tokenizer.batch_decode(new, skip_special_tokens=True))
    return outputs


def bleu(predictions: list[str], references: list[str]) -> float:
    """Corpus BLEU (sacrebleu, 0 to 100)."""
    import sacrebleu

    return float(sacrebleu.corpus_bleu(predictions, [references]).score)


def rouge_l(predictions: list[str], references: list[str]) -> float:
    """Mean ROUGE-L F1 (0 to 1)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    scores = [scorer.score(ref, pred)["rougeL"].fmeasure for pred, ref in zip(predictions, references, strict=True)]
    return sum(scores) / len(scores) if scores else 0.0
