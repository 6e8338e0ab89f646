"""Data for challenges that pretrain from scratch: a tokenizer and packed uint16 token files per split."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from challenges.lib.corpus import split_of, stdlib_docstrings
from challenges.lib.tokens import train_tokenizer, write_meta, write_token_file


def docstring_splits(extra: Sequence[str] = ()) -> dict[str, list[str]]:
    """The offline smoke corpus: de-duplicated stdlib docstrings (and any extra texts), split by content hash."""
    docs = list(dict.fromkeys([*stdlib_docstrings(), *extra]))
    return {"train": [d for d in docs if split_of(d) == "train"],
            "validation": [d for d in docs if split_of(d) == "validation"]}


def write_pretraining_data(data_dir: Path, splits: dict[str, Sequence[str]], vocab_size: int,
                           tokenizer_texts: Sequence[str] | None = None, **meta) -> None:
    """data_dir/tokenizer, <split>.bin for each split, and meta.json with the token counts and `meta`."""
    texts = splits["train"] if tokenizer_texts is None else tokenizer_texts
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size, out_dir=data_dir / "tokenizer")
    counts = {name: write_token_file(items, tokenizer, data_dir / f"{name}.bin") for name, items in splits.items()}
    write_meta(data_dir, vocab_size=len(tokenizer), tokens=counts, **meta)


def text_column(dataset) -> str:
    """The dataset's text column: `text` when there is one, else its first string column."""
    features = dataset.features
    if "text" in features:
        return "text"
    return next(name for name, feature in features.items() if getattr(feature, "dtype", "") == "string")
