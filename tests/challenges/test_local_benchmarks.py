"""The generated BLiMP, CosmosQA and MMLU items: well-formed, and scored through real lm-eval on a tiny model."""

from __future__ import annotations

import pytest

from challenges.framework.split import mean_of_groups
from challenges.lib.mcq import score_benchmark, smoke_items, write_smoke_items
from tests.challenges.builders import context, tiny_model


def test_generated_items_have_their_benchmarks_formats():
    for item in smoke_items("mmlu")["smoke_mmlu_arithmetic"]:
        a, b = (int(x) for x in item["question"].removeprefix("What is ").removesuffix("?").split(" + "))
        assert len(item["choices"]) == 4 == len(set(item["choices"])) and item["choices"][item["answer"]] == str(a + b)
    for item in smoke_items("blimp")["smoke_blimp_agreement"]:
        assert item["sentence_good"] != item["sentence_bad"]
    for item in smoke_items("cosmosqa")["smoke_cosmosqa"]:  # in MLRB's CosmosQA fields
        color = item["input"].split("fence ")[1].split()[0]
        assert item["answer_choices"][item["label"]] == item["target"] == f"It is {color}."


def test_blimp_and_cosmosqa_local_tasks_run_through_lm_eval(tmp_path):
    ctx = context(tmp_path, "babylm")
    for benchmark in ("blimp", "cosmosqa"):
        write_smoke_items(ctx.private_dir, benchmark, count=12)
    model = tiny_model(tmp_path / "model", "qwen2")
    blimp = score_benchmark(model, ctx, "blimp")
    assert set(blimp.details["per_task"]) == {"smoke_blimp_agreement", "smoke_blimp_determiner"}
    assert 0 <= blimp.value <= 1
    # One item per generated sentence pair, grouped by task: their mean of task means is the score itself.
    assert {task: len(items) for task, items in blimp.items.items()} == {
        "smoke_blimp_agreement": 12, "smoke_blimp_determiner": 12}
    assert mean_of_groups(blimp.items) == pytest.approx(blimp.value, abs=1e-9)
    cosmosqa = score_benchmark(model, ctx, "cosmosqa")
    assert set(cosmosqa.details["per_task"]) == {"smoke_cosmosqa"} and 0 <= cosmosqa.value <= 1
