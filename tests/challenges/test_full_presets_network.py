"""Opt-in (--run-network): every full preset's hub sources pass doctor's checks on the real hub, and the preset
prepares with a row limit (RESEARCH_CREW_ROW_LIMIT caps each dataset; models come whole: llm_merging's
full preset downloads about 31 GB). Needs the internet and the disk each preset states."""

from __future__ import annotations

import json

import pytest

from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge
from crew.cli.doctor_checks import FAIL, hub_checks, lm_eval_checks

MLRB = ["babylm", "edge_llm_compression", "edge_llm_training", "llm_efficiency", "llm_merging",
        "math_autoformalization", "minipile"]


@pytest.mark.network
@pytest.mark.parametrize("name", MLRB)
def test_full_preset_sources_are_reachable_and_prepare_with_a_row_limit(name, monkeypatch):
    challenge = load_challenge(name)
    preset = challenge.preset("full")
    checks = hub_checks(challenge, preset) + lm_eval_checks(challenge, preset)
    assert [c for c in checks if c.verdict == FAIL] == [], checks
    monkeypatch.setenv("RESEARCH_CREW_ROW_LIMIT", "200")
    data = prepare_data(challenge, "full")
    meta = json.loads((data.data_dir / "meta.json").read_text())
    assert meta["preset"] == "full"
