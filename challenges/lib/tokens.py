"""Tokenizer training and packed token files for language-model pretraining challenges."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

import numpy as np

EOS = "<|endoftext|>"


def train_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: Path, special_tokens: tuple[str, ...] = ()):
    """Train a byte-level BPE tokenizer and save it as a Hugging Face tokenizer folder.

    `special_tokens` are extra ones (e.g. a "<pad>" for seq2seq models); "<pad>", when given, becomes the pad token.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS, *special_tokens],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator(texts, trainer=trainer)
    pad = {"pad_token": "<pad>"} if "<pad>" in special_tokens else {}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token=EOS, bos_token=EOS, unk_token=EOS, **pad)
    tokenizer.save_pretrained(out_dir)
    return tokenizer


def write_token_file(texts: Iterable[str], tokenizer, path: Path, batch_size: int = 1000) -> int:
    """Append every text's tokens followed by EOS to a flat uint16 file; return the token count."""
    if len(tokenizer) > np.iinfo(np.uint16).max:
        raise ValueError(f"vocabulary of {len(tokenizer)} does not fit uint16 token files")
    eos = tokenizer.convert_tokens_to_ids(EOS)
    total = 0
    with open(path, "wb") as out:
        for batch in _batches(texts, batch_size):
            ids = tokenizer(batch, add_special_tokens=False)["input_ids"]
            flat = np.fromiter((t for doc in ids for t in (*doc, eos)), dtype=np.uint16)
            out.write(flat.tobytes())
            total += flat.size
    return total


def write_meta(data_dir: Path, **fields) -> None:
    (Path(data_dir) / "meta.json").write_text(json.dumps(fields, indent=2) + "\n", encoding="utf-8")


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
