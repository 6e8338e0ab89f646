"""Full and mini presets prepare through the real code paths and the real huggingface_hub client, from a local
stand-in for the hub that holds tiny versions of the repositories they name (tests/fixtures/hub). Only lm-eval's
own dataset download is replaced (it goes through the datasets library's hub protocol); the task names each
preset asks for are recorded and checked against lm-eval's index elsewhere (doctor)."""

from __future__ import annotations

import json

import pytest

from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge
from challenges.lib.lm_tasks import read_jsonl
from challenges.lib.model_checks import tensor_shapes
from tests.challenges import mlrb_content
from tests.challenges.hub_server import FakeHub, point_client_at


@pytest.fixture(scope="module")
def content(tmp_path_factory):
    return mlrb_content.build(tmp_path_factory.mktemp("mlrb_hub"))


@pytest.fixture
def hub(content, monkeypatch):
    """The local hub, this process's client pointed at it; records the lm-eval tasks prefetched."""
    server = FakeHub(content)
    point_client_at(server, monkeypatch)
    server.tasks = []
    monkeypatch.setattr("challenges.lib.lm_eval_scoring.prefetch_tasks", lambda names: server.tasks.extend(names))
    yield server
    server.close()
    assert server.unexpected == [], server.unexpected


def _prepare(name: str, preset: str = "mini"):
    data = prepare_data(load_challenge(name), preset)
    return data, json.loads((data.data_dir / "meta.json").read_text())


def _fetched(hub: FakeHub) -> list[str]:
    """The repositories whose metadata was asked, in order, once each."""
    repos = []
    for _, path, _ in hub.requests:
        parts = path.split("?")[0].split("/")
        if len(parts) > 4 and parts[1] == "api" and parts[2] in ("models", "datasets") and parts[5] == "revision":
            repo = f"{parts[3]}/{parts[4]}"
            if repo not in repos:
                repos.append(repo)
    return repos


def test_minipile_prepares_mlrbs_parquet_copy(hub):
    data, meta = _prepare("minipile", "mini")
    assert _fetched(hub) == ["AlgorithmicResearchGroup/minipile"] and hub.tasks == ["super-glue-lm-eval-v1"]
    assert meta["dataset"] == "AlgorithmicResearchGroup/minipile" and meta["max_params"] == 30_000_000
    assert meta["tokens"]["train"] > meta["tokens"]["validation"] > 0
    assert (data.data_dir / "train.bin").stat().st_size == 2 * meta["tokens"]["train"]
    downloaded = [p for m, p, _ in hub.requests if m == "GET" and "/resolve/" in p or p.startswith("/cdn/")]
    assert not any("test-00000" in p for p in downloaded)  # only the files the preset uses are fetched


def test_babylm_prepares_strict_small_from_the_parquet_conversion(hub):
    data, meta = _prepare("babylm")
    assert _fetched(hub) == ["AlgorithmicResearchGroup/babylm"] and hub.tasks == ["blimp"]
    assert meta["dataset"] == "AlgorithmicResearchGroup/babylm" and meta["train_words"] == 100 * 14
    assert meta["tokens"]["train"] > meta["tokens"]["validation"] > 0 and (data.data_dir / "tokenizer").is_dir()


def test_edge_llm_training_prepares_mlrbs_c4_and_alpaca_within_one_gib(hub):
    _, meta = _prepare("edge_llm_training", "full")
    assert _fetched(hub) == ["AlgorithmicResearchGroup/edge_llm_training"]
    assert hub.tasks == ["super-glue-lm-eval-v1"]
    assert meta["memory_limit_bytes"] == 1 << 30 and meta["max_params"] * 4 < meta["memory_limit_bytes"]
    assert meta["tokens"]["validation"] > 0  # C4 has no validation split: one is made by content hash


def test_llm_efficiency_prepares_an_ungated_base_model_and_dolly(hub):
    data, meta = _prepare("llm_efficiency", "full")
    assert _fetched(hub) == ["Qwen/Qwen1.5-7B", "databricks/databricks-dolly-15k"] and hub.tasks == ["mmlu"]
    assert read_jsonl(data.data_dir / "train.jsonl")[0] == {"instruction": "Say hi.", "context": "", "response": "hi"}
    assert meta["base_parameters"] > 0 and "Qwen" in meta["approved_base_models"]
    assert meta["base_model"] == "Qwen/Qwen1.5-7B"


def test_edge_llm_compression_prepares_phi2_with_a_12_gib_limit(hub):
    data, meta = _prepare("edge_llm_compression", "full")
    assert _fetched(hub) == ["microsoft/phi-2"] and hub.tasks == ["mmlu"]
    assert meta["memory_limit_bytes"] == 12 << 30 and (data.data_dir / "base_model" / "config.json").is_file()


def test_llm_merging_prepares_experts_uploaded_before_the_limit_and_mlrbs_sets(hub):
    data, meta = _prepare("llm_merging", "full")
    assert _fetched(hub) == ["Qwen/Qwen1.5-7B", "Qwen/Qwen1.5-7B-Chat", "AlgorithmicResearchGroup/llm_merging"]
    assert hub.tasks == ["mmlu"] and meta["uploaded_before"] == "2024-05-31"
    assert sorted(p.name for p in (data.data_dir / "experts").iterdir()) == sorted(meta["experts"])
    scored = read_jsonl(data.private_dir / "cosmosqa" / "cosmosqa.jsonl")
    visible = read_jsonl(data.data_dir / "validation" / "cosmosqa.jsonl")
    assert scored[0]["answer_choices"] == ["rain", "sun", "snow", "wind"] and len(scored) + len(visible) == 20
    assert not {i["input"] for i in scored} & {i["input"] for i in visible}  # the scored items stay private
    assert len(read_jsonl(data.private_dir / "xsum.jsonl")) + len(read_jsonl(data.data_dir / "validation" /
                                                                             "xsum.jsonl")) == 10


def test_math_autoformalization_converts_pickled_weights_and_splits_proofnet(hub):
    data, meta = _prepare("math_autoformalization")
    assert _fetched(hub) == ["PAug/ProofNetSharp", "google/byt5-small"]
    test = read_jsonl(data.data_dir / "test.jsonl")
    assert test == [{"id": "test_1", "nl_statement": "Every group of prime order is cyclic.",
                     "header": "import Mathlib\nopen Fintype"}]  # no answer among what agents see
    assert read_jsonl(data.private_dir / "references.jsonl")[0]["formal_statement"].startswith("theorem test_1")
    base = data.data_dir / "base_model"
    assert tensor_shapes(base) and not list(base.glob("pytorch_model*"))  # converted to safetensors
    assert meta["train_pairs"] == 1 and meta["base_model"] == "google/byt5-small"


def test_a_row_limit_caps_every_dataset_and_keys_the_cache(hub, monkeypatch):
    full, _ = _prepare("babylm")
    monkeypatch.setenv("RESEARCH_CREW_ROW_LIMIT", "1")
    capped, meta = _prepare("babylm")
    assert capped.data_dir != full.data_dir and capped.data_dir.parent.name.endswith("-rows1")
    assert meta["tokens"]["train"] > 0
