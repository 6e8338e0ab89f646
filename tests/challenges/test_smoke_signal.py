"""Smoke presets whose score can move (issue 22): a stated proxy where the real metric cannot, and BLiMP-format
smoke items that length alone cannot answer. benchmarks/smoke_signal.py measures the movement itself."""

from __future__ import annotations

import pytest

from challenges.framework.loader import load_challenge
from challenges.lib.mcq import smoke_items
from tests.ops.helpers import invoke


def test_blimp_smoke_items_leave_length_at_chance():
    for task, items in smoke_items("blimp").items():
        longer = sum(len(i["sentence_good"]) > len(i["sentence_bad"]) for i in items) / len(items)
        assert 0.35 <= longer <= 0.65, (task, longer)  # "pick the longer sentence" scores near 0.5


@pytest.mark.parametrize("name", ["minipile", "babylm", "edge_llm_training", "llm_efficiency", "edge_llm_compression",
                                  "llm_merging"])
def test_smoke_presets_score_a_stated_proxy(name):
    challenge = load_challenge(name)
    smoke = challenge.for_preset("smoke").metric
    assert (smoke.name, smoke.direction) == ("heldout_bits_per_byte", "min")
    assert challenge.for_preset("full").metric == challenge.metric  # the real metric everywhere else
    shown = invoke("challenges", "show", name).output
    assert f"scored by a proxy: heldout_bits_per_byte, min, instead of {challenge.metric.name}" in shown


def test_a_baseline_recorded_in_another_metric_is_no_reference(tmp_path, monkeypatch):
    from crew.run import reference

    monkeypatch.setenv("RESEARCH_CREW_CACHE", str(tmp_path))
    reference.record_baseline_scores("minipile", "smoke", [0.42], [0.42], "run-1", "superglue_mean")
    assert reference.baseline("minipile", "smoke", "heldout_bits_per_byte") is None  # the preset's proxy now
    assert reference.baseline("minipile", "smoke", "superglue_mean").score == 0.42
