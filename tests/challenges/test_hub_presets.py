"""Full and mini presets prepare through the real code paths on small local data: only the hub is replaced."""

from __future__ import annotations

import json

import datasets
import pytest

from challenges.data import prepare_data
from challenges.lib.lm_tasks import read_jsonl
from challenges.lib.tiny_models import save_model, smoke_tokenizer, tiny_seq2seq
from challenges.loader import load_challenge
from tests.challenges.builders import tiny_model

TEXTS = [f"The {w} child saw {n} small birds near the old river on day {n}." for n in range(60)
         for w in ("happy", "tall")]


def _split(**columns) -> datasets.Dataset:
    return datasets.Dataset.from_dict(columns)


LOCAL = {
    "AlienKevin/BabyLM_2024_10M": lambda: datasets.DatasetDict(
        train=_split(text=TEXTS[:100]), dev=_split(text=TEXTS[100:]), test=_split(text=TEXTS[100:])),
    "allenai/c4": lambda: datasets.DatasetDict(train=_split(text=TEXTS[:100]), validation=_split(text=TEXTS[100:])),
    "tatsu-lab/alpaca": lambda: _split(text=["### Instruction:\nSay hi.\n\n### Response:\nhi"] * 5),
    "databricks/databricks-dolly-15k": lambda: _split(instruction=["Say hi."] * 8, context=[""] * 8,
                                                      response=["hi"] * 8, category=["open_qa"] * 8),
    "allenai/cosmos_qa": lambda: _split(id=["c1"], context=["It rained."], question=["Why wet?"], answer0=["rain"],
                                        answer1=["sun"], answer2=["snow"], answer3=["wind"], label=[0]),
    "EdinburghNLP/xsum": lambda: _split(document=["A long article."] * 3, summary=["Short."] * 3, id=["1", "2", "3"]),
    "PAug/ProofNetSharp": lambda: datasets.DatasetDict(**{split: _split(
        id=[f"{split}_1"], nl_statement=["Every group of prime order is cyclic."], nl_proof=["..."],
        lean4_src_header=["import Mathlib\nopen Fintype"],
        lean4_formalization=[f"theorem {split}_1 {{G : Type*}} [Group G] : True"]) for split in ("valid", "test")}),
}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """The hub, replaced by local datasets and tiny models; records every id asked for."""
    asked: list[str] = []

    def load_hub_dataset(dataset_id, name=None, **kwargs):
        asked.append(dataset_id)
        return LOCAL[dataset_id]() if dataset_id in LOCAL else None  # lm-eval's own sets: only fetched

    def fetch_hub_model(model_id, out_dir, seq2seq=False):
        asked.append(model_id)
        if seq2seq:
            tokenizer = smoke_tokenizer(tmp_path / "t5tok", special_tokens=("<pad>",))
            return save_model(tiny_seq2seq(len(tokenizer), tokenizer.pad_token_id, tokenizer.eos_token_id),
                              tokenizer, out_dir)
        architecture = "phi" if "phi" in model_id else "qwen2" if "Qwen" in model_id else "gpt_neox"
        return tiny_model(out_dir, architecture, tokenizer_dir=tmp_path / "tok")

    monkeypatch.setattr("challenges.lib.hub.load_hub_dataset", load_hub_dataset)
    monkeypatch.setattr("challenges.lib.hub.fetch_hub_model", fetch_hub_model)
    return asked


def _prepare(name: str, preset: str = "mini"):
    data = prepare_data(load_challenge(name), preset)
    return data, json.loads((data.data_dir / "meta.json").read_text())


def test_babylm_prepares_strict_small_and_fetches_blimp(hub):
    data, meta = _prepare("babylm")
    assert hub == ["AlienKevin/BabyLM_2024_10M", "nyu-mll/blimp"]
    assert meta["dataset"] == "AlienKevin/BabyLM_2024_10M" and meta["train_words"] == 100 * 14
    assert meta["tokens"]["train"] > meta["tokens"]["validation"] > 0 and (data.data_dir / "tokenizer").is_dir()


def test_edge_llm_training_prepares_c4_and_alpaca_within_one_gib(hub):
    _, meta = _prepare("edge_llm_training", "full")
    assert hub == ["allenai/c4", "tatsu-lab/alpaca"] + ["aps/super_glue"] * 8
    assert meta["memory_limit_bytes"] == 1 << 30 and meta["max_params"] * 4 < meta["memory_limit_bytes"]


def test_llm_efficiency_prepares_the_base_model_and_dolly(hub):
    data, meta = _prepare("llm_efficiency")
    assert hub == ["EleutherAI/pythia-410m", "databricks/databricks-dolly-15k", "cais/mmlu"]
    assert read_jsonl(data.data_dir / "train.jsonl")[0] == {"instruction": "Say hi.", "context": "", "response": "hi"}
    assert meta["base_parameters"] > 0 and "Pythia" in meta["approved_base_models"]


def test_edge_llm_compression_prepares_phi2_with_a_12_gib_limit(hub):
    data, meta = _prepare("edge_llm_compression", "full")
    assert hub == ["microsoft/phi-2", "cais/mmlu"]
    assert meta["memory_limit_bytes"] == 12 << 30 and (data.data_dir / "base_model" / "config.json").is_file()


def test_llm_merging_prepares_experts_cosmosqa_and_xsum(hub):
    data, meta = _prepare("llm_merging")
    assert hub == ["Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct", "cais/mmlu", "allenai/cosmos_qa",
                   "EdinburghNLP/xsum"]
    assert sorted(p.name for p in (data.data_dir / "experts").iterdir()) == sorted(meta["experts"])
    assert read_jsonl(data.private_dir / "cosmosqa" / "cosmosqa.jsonl")[0]["answer0"] == "rain"
    assert len(read_jsonl(data.private_dir / "xsum.jsonl")) == 3


def test_math_autoformalization_splits_proofnet_into_visible_and_private(hub):
    data, meta = _prepare("math_autoformalization")
    assert hub == ["PAug/ProofNetSharp", "google/byt5-small"]
    test = read_jsonl(data.data_dir / "test.jsonl")
    assert test == [{"id": "test_1", "nl_statement": "Every group of prime order is cyclic.",
                     "header": "import Mathlib\nopen Fintype"}]  # no answer among what agents see
    assert read_jsonl(data.private_dir / "references.jsonl")[0]["formal_statement"].startswith("theorem test_1")
    assert meta["train_pairs"] == 1 and meta["base_model"] == "google/byt5-small"
