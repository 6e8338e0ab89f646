"""Tiny, randomly initialised stand-ins for hub models, so that smoke presets run offline on a CPU.

Each has the architecture (config class) of the hub model it replaces, so prepare, recipes, checks and
scoring take the same code paths as on the full preset; only the sizes differ.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from pathlib import Path

from challenges.lib.corpus import stdlib_docstrings
from challenges.lib.tokens import train_tokenizer

SMOKE_VOCAB = 2048
SMOKE_CONTEXT = 512


def smoke_tokenizer(out_dir: Path, extra_texts: Iterable[str] = (), special_tokens: tuple[str, ...] = ()):
    """A byte-level BPE tokenizer trained on stdlib docstrings plus the challenge's own smoke texts."""
    texts = [*islice(stdlib_docstrings(), 1500), *extra_texts]
    return train_tokenizer(texts, vocab_size=SMOKE_VOCAB, out_dir=out_dir, special_tokens=special_tokens)


def tiny_causal_lm(architecture: str, vocab_size: int, eos_id: int, seed: int = 0, layers: int = 4):
    """A tiny causal LM of one of the hub architectures we stand in for: phi, qwen2 or gpt_neox."""
    import torch
    from transformers import AutoModelForCausalLM, GPTNeoXConfig, PhiConfig, Qwen2Config

    common = dict(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=layers, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=SMOKE_CONTEXT, bos_token_id=eos_id,
                  eos_token_id=eos_id)
    configs = {
        "phi": lambda: PhiConfig(**common, partial_rotary_factor=0.4, resid_pdrop=0.0, embd_pdrop=0.0),
        "qwen2": lambda: Qwen2Config(**common, num_key_value_heads=2, tie_word_embeddings=True),
        "gpt_neox": lambda: GPTNeoXConfig(**common, rotary_pct=0.25, use_parallel_residual=True),
    }
    if architecture not in configs:
        raise ValueError(f"no tiny stand-in for architecture '{architecture}'; have {sorted(configs)}")
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(configs[architecture]())


def tiny_seq2seq(vocab_size: int, pad_id: int, eos_id: int, seed: int = 0):
    """A tiny T5 (the architecture of the hub's t5/byt5 checkpoints)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, T5Config

    config = T5Config(vocab_size=vocab_size, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                      num_heads=4, dropout_rate=0.0, pad_token_id=pad_id, eos_token_id=eos_id,
                      decoder_start_token_id=pad_id)
    torch.manual_seed(seed)
    return AutoModelForSeq2SeqLM.from_config(config)


def train_briefly(model, tokenizer, texts: list[str], steps: int, seed: int = 0, max_length: int = 96) -> None:
    """A few AdamW steps on random batches of `texts` (pads with end-of-text, masked out of the loss): enough
    for a tiny stand-in to predict text better than chance, so what is done to it afterwards shows in a score."""
    import random

    import torch

    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: more threads only contend for a shared CPU
    try:
        for _ in range(steps):
            batch = tokenizer(rng.sample(texts, 16), return_tensors="pt", padding=True, truncation=True,
                              max_length=max_length)
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            model(**batch, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    finally:
        torch.set_num_threads(threads)


def save_model(model, tokenizer, out_dir: Path) -> Path:
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return Path(out_dir)
