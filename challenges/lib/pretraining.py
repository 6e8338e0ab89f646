"""Data for challenges that pretrain from scratch: a tokenizer and packed uint16 token files per split."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from challenges.lib.corpus import split_of, stdlib_docstrings
from challenges.lib.hub import read_rows
from challenges.lib.tokens import train_tokenizer, write_meta, write_token_file


def docstring_splits(extra: Sequence[str] = ()) -> dict[str, list[str]]:
    """The offline smoke corpus: de-duplicated stdlib docstrings (and any extra texts), split by content hash."""
    docs = list(dict.fromkeys([*stdlib_docstrings(), *extra]))
    return {"train": [d for d in docs if split_of(d) == "train"],
            "validation": [d for d in docs if split_of(d) == "validation"]}


def write_pretraining_data(data_dir: Path, splits: Mapping[str, Iterable[str]], vocab_size: int,
                           tokenizer_texts: Iterable[str] | None = None, **meta) -> None:
    """data_dir/tokenizer, <split>.bin for each split, and meta.json with the token counts and `meta`.

    Each split is read once (a generator will do); the tokenizer trains on `tokenizer_texts`, else on train.
    """
    texts = splits["train"] if tokenizer_texts is None else tokenizer_texts
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size, out_dir=data_dir / "tokenizer")
    counts = {name: write_token_file(items, tokenizer, data_dir / f"{name}.bin") for name, items in splits.items()}
    write_meta(data_dir, vocab_size=len(tokenizer), tokens=counts, **meta)


def parquet_texts(files: Sequence[Path], column: str | None = None,
                  extract: Callable[[dict], Iterable[str]] | None = None,
                  columns: Sequence[str] | None = None) -> Callable[[str], Iterator[str]]:
    """split -> the non-empty texts of that split's parquet files, read afresh on every call.

    A file belongs to a split by its name (`train-00000-of-00012.parquet`) or its folder (`default/train/...`,
    the hub's parquet conversion). A dataset without a validation split gets one by content hash from train
    (and train leaves those texts out). `extract` turns a row into texts (default: the row's `column`).
    """
    by_split: dict[str, list[Path]] = {}
    for file in files:
        split = file.parent.name if file.name[:1].isdigit() else file.name.split("-")[0]
        by_split.setdefault(split, []).append(file)
    hashed = "validation" not in by_split and "dev" not in by_split
    aliases = {"validation": "dev"} if "dev" in by_split else {}
    extract = extract or (lambda row: [row[column]])
    wanted = columns or ([column] if column else None)

    def texts(split: str) -> Iterator[str]:
        source = "train" if hashed else aliases.get(split, split)
        for row in read_rows(by_split.get(source, []), wanted):
            for text in extract(row):
                if text and text.strip() and (not hashed or split_of(text) == split):
                    yield text
    return texts
