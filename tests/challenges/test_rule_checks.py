"""Rule checks reject bad submissions with a reason that says what is wrong: the issue's four fixtures and more."""

from __future__ import annotations

import json
import shutil

import pytest

from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from challenges.lib.model_checks import load_and_measure, stored_parameters
from tests.challenges.builders import challenge_module, context, quantize_fixture, tiny_model


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A tiny phi base model, as edge_llm_compression's prepare would leave it."""
    return tiny_model(tmp_path_factory.mktemp("base") / "base_model", "phi", layers=4)


def _compression_ctx(tmp_path, base, limit_bytes=None):
    ctx = context(tmp_path, "edge_llm_compression")
    shutil.copytree(base, ctx.data_dir / "base_model")
    parameters = stored_parameters(base)
    (ctx.data_dir / "meta.json").write_text(json.dumps({"base_parameters": parameters,
                                                        "memory_limit_bytes": limit_bytes or 8 * parameters}))
    return ctx


def test_a_quantized_model_is_rejected_without_being_loaded(tmp_path, base):
    ctx = _compression_ctx(tmp_path, base)
    submission = quantize_fixture(shutil.copytree(base, tmp_path / "quantized"))
    problems = challenge_module("edge_llm_compression").check(submission, ctx)
    assert any("quantized" in p and "bitsandbytes" in p for p in problems), problems
    assert any("int8" in p and "quantization" in p for p in problems), problems


def test_a_model_over_its_memory_limit_is_rejected(tmp_path, base):
    stats = load_and_measure(base)
    ctx = _compression_ctx(tmp_path, base, limit_bytes=stats.tensor_bytes // 2)
    problems = challenge_module("edge_llm_compression").check(base, ctx)
    assert len(problems) == 1 and "over the memory limit" in problems[0], problems
    # The same model within the limit passes every check.
    assert challenge_module("edge_llm_compression").check(base, _compression_ctx(tmp_path / "ok", base)) == []


def test_edge_training_rejects_an_oversized_model_through_the_harness(tmp_path, base):
    ctx = context(tmp_path, "edge_llm_training", meta={"memory_limit_bytes": 64 * 1024})
    record = evaluate(load_challenge("edge_llm_training"), base, ctx, tmp_path / "evaluations", timeout_s=120)
    assert not record.ok and record.score is None
    assert len(record.violations) == 1 and "over the memory limit of 0.1 MiB" in record.violations[0]
    assert "1 rule violation" in record.error


def test_a_merge_of_incompatible_architectures_is_rejected(tmp_path):
    ctx = context(tmp_path, "llm_merging", meta={"experts": {"qwen": "q", "phi": "p"}, "max_parameters": 10**9})
    tokenizer_dir = tmp_path / "tok"
    tiny_model(ctx.data_dir / "experts" / "qwen", "qwen2", tokenizer_dir=tokenizer_dir)
    tiny_model(ctx.data_dir / "experts" / "phi", "phi", tokenizer_dir=tokenizer_dir)
    merged = shutil.copytree(ctx.data_dir / "experts" / "qwen", tmp_path / "merged")
    (merged / "merge.json").write_text(json.dumps({"experts": ["qwen", "phi"], "method": "average"}))
    problems = challenge_module("llm_merging").check(merged, ctx)
    assert problems and all("incompatible architectures" in p for p in problems), problems
    assert "expert 'phi' is 'phi', expert 'qwen' is 'qwen2'" in problems[0]


def test_a_merge_of_same_type_but_different_shapes_is_rejected(tmp_path):
    ctx = context(tmp_path, "llm_merging", meta={"experts": {}, "max_parameters": 10**9})
    tiny_model(ctx.data_dir / "experts" / "small", "qwen2", layers=2, tokenizer_dir=tmp_path / "tok")
    tiny_model(ctx.data_dir / "experts" / "deep", "qwen2", layers=3, tokenizer_dir=tmp_path / "tok")
    merged = shutil.copytree(ctx.data_dir / "experts" / "small", tmp_path / "merged")
    (merged / "merge.json").write_text(json.dumps({"experts": ["small", "deep"]}))
    problems = challenge_module("llm_merging").check(merged, ctx)
    assert len(problems) == 1 and "differs from expert 'small'" in problems[0] and "model.layers.2" in problems[0]


@pytest.mark.parametrize("challenge", ["babylm", "edge_llm_training", "llm_efficiency", "edge_llm_compression",
                                       "llm_merging"])
def test_a_model_folder_missing_files_is_rejected(tmp_path, base, challenge):
    submission = shutil.copytree(base, tmp_path / "submission")
    (submission / "tokenizer.json").unlink()
    (submission / "tokenizer_config.json").unlink()
    (submission / "model.safetensors").unlink()
    problems = challenge_module(challenge).check(submission, context(tmp_path, challenge, meta={}))
    assert any("no weights" in p for p in problems) and any("no tokenizer files" in p for p in problems), problems


def test_a_merge_without_merge_json_is_rejected(tmp_path, base):
    problems = challenge_module("llm_merging").check(base, context(tmp_path, "llm_merging", meta={}))
    assert problems == ['merge.json is missing: write {"experts": [names in data/experts], "method": ...}']


def test_autoformalization_rejects_missing_or_incomplete_predictions(tmp_path):
    ctx = context(tmp_path, "math_autoformalization")
    (ctx.data_dir / "test.jsonl").write_text('{"id": "a", "nl_statement": "x", "header": ""}\n'
                                             '{"id": "b", "nl_statement": "y", "header": ""}\n')
    scorer = challenge_module("math_autoformalization")
    submission = tmp_path / "submission"
    submission.mkdir()
    assert "predictions.jsonl is missing" in scorer.check(submission, ctx)[0]
    (submission / "predictions.jsonl").write_text('{"id": "a", "formal_statement": "theorem a : True"}\n')
    assert scorer.check(submission, ctx) == ["1 test item(s) have no prediction, e.g. ['b']"]
    (submission / "predictions.jsonl").write_text('{"id": "a"}\nnot json\n')
    assert "line 2 is not JSON" in scorer.check(submission, ctx)[0]


def test_llm_efficiency_rejects_another_model_or_an_unmerged_adapter(tmp_path, base):
    ctx = context(tmp_path, "llm_efficiency", meta={"base_model": "tiny", "base_parameters": stored_parameters(base)})
    shutil.copytree(base, ctx.data_dir / "base_model")
    other = tiny_model(tmp_path / "other", "gpt_neox", layers=4)
    problems = challenge_module("llm_efficiency").check(other, ctx)
    assert any("model_type is 'gpt_neox'" in p for p in problems), problems
    small = tiny_model(tmp_path / "small", "phi", layers=1)
    assert any("merge adapters" in p for p in challenge_module("llm_efficiency").check(small, ctx))
