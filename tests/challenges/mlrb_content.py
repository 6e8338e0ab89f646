"""Tiny content for the stand-ins of the hub repositories the built-in presets name (tests/fixtures/hub)."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from challenges.lib.corpus import stdlib_docstrings
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_causal_lm, tiny_seq2seq

TEXTS = [f"The {w} child saw {n} small birds near the old river on day {n}." for n in range(60)
         for w in ("happy", "tall")]


def _parquet(path: Path, **columns) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def build(root: Path) -> dict[str, Path]:
    """Write every content folder under `root`; return name -> folder."""
    tokenizer = smoke_tokenizer(root / "_tokenizer")
    t5_tokenizer = smoke_tokenizer(root / "_t5_tokenizer", special_tokens=("<pad>",))
    eos = tokenizer.eos_token_id
    save_model(tiny_causal_lm("qwen2", len(tokenizer), eos, layers=1), tokenizer, root / "tiny-qwen2")
    save_model(tiny_causal_lm("qwen2", len(tokenizer), eos, layers=1, seed=1), tokenizer, root / "tiny-qwen2-chat")
    save_model(tiny_causal_lm("gpt_neox", len(tokenizer), eos, layers=1), tokenizer, root / "tiny-pythia")
    save_model(tiny_causal_lm("phi", len(tokenizer), eos, layers=2), tokenizer, root / "tiny-phi")
    t5 = tiny_seq2seq(len(t5_tokenizer), t5_tokenizer.pad_token_id, t5_tokenizer.eos_token_id)
    t5.save_pretrained(root / "tiny-t5-pickled", safe_serialization=False)  # like byt5-small: pytorch_model.bin only
    t5_tokenizer.save_pretrained(root / "tiny-t5-pickled")

    docs = list(islice(stdlib_docstrings(), 400))
    _parquet(root / "minipile/data/train-00000-of-00001.parquet", text=docs[:360])
    _parquet(root / "minipile/data/validation-00000-of-00001.parquet", text=docs[360:])
    _parquet(root / "minipile/data/test-00000-of-00001.parquet", text=docs[:10])
    for split, texts in (("train", TEXTS[:100]), ("dev", TEXTS[100:]), ("test", TEXTS[100:])):
        _parquet(root / f"babylm/default/{split}/0000.parquet", filename=[f"corpus.{split}"],
                 content=["\n".join(texts)])
    _parquet(root / "edge_llm_training/c4_combined_dataset/train-00000-of-00001.parquet", text=docs)
    _parquet(root / "edge_llm_training/alpaca_cleaned/train-00000-of-00001.parquet",
             instruction=["Say hi."] * 5, input=[""] * 5, output=["hi"] * 5)
    _parquet(root / "llm_merging/cosmos_qa/train-00000-of-00001.parquet",
             input=[f"It rained on day {n}. Why was the road wet?\nAnswer:" for n in range(20)],
             target=["rain"] * 20, answer_choices=[["rain", "sun", "snow", "wind"]] * 20, label=[0] * 20)
    _parquet(root / "llm_merging/xsum/train-00000-of-00001.parquet",
             input=[f"A long article about day {n}." for n in range(10)], target=["Short."] * 10)
    _parquet(root / "dolly/default/train/0000.parquet", instruction=["Say hi."] * 8, context=[""] * 8,
             response=["hi"] * 8, category=["open_qa"] * 8)
    for split in ("valid", "test"):
        _parquet(root / f"proofnet/data/{split}-00000-of-00001.parquet", id=[f"{split}_1"],
                 nl_statement=["Every group of prime order is cyclic."], nl_proof=["..."],
                 lean4_src_header=["import Mathlib\nopen Fintype"],
                 lean4_formalization=[f"theorem {split}_1 {{G : Type*}} [Group G] : True"])
    names = ["tiny-qwen2", "tiny-qwen2-chat", "tiny-pythia", "tiny-phi", "tiny-t5-pickled", "minipile", "babylm",
             "edge_llm_training", "llm_merging", "dolly", "proofnet"]
    return {name: root / name for name in names}
