"""The harness's dev / held-out split of per-item results, through the real subprocess scorer."""

from __future__ import annotations

import json

import pytest

from challenges.framework.api import ScoreContext
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from challenges.framework.split import HELDOUT_FRACTION, NO_ITEMS, is_heldout
from tests.foundation.helpers import write_challenge

# The submission file holds {group: {item: value}}; the score is the mean of group means, as lm-eval's.
GROUPED_SCORER = """\
import json
from challenges import Score

def score(submission, ctx):
    items = json.loads(submission.read_text())
    value = sum(sum(v.values()) / len(v) for v in items.values()) / len(items)
    per_task = {g: sum(v.values()) / len(v) for g, v in items.items()}
    return Score(value + float(ctx.preset == "off"), {"groups": sorted(items), "per_task": per_task}, items=items)
"""


def _score(tmp_path, items: dict, preset: str = "smoke"):
    if not (tmp_path / "challenges" / "grouped").exists():
        write_challenge(tmp_path / "challenges", "grouped", scorer=GROUPED_SCORER)
    challenge = load_challenge(tmp_path / "challenges" / "grouped")
    ctx = ScoreContext("grouped", preset, tmp_path / "data", tmp_path / "private", tmp_path / "scratch")
    artifact = tmp_path / f"answer-{len(list(tmp_path.glob('answer-*')))}.json"
    artifact.write_text(json.dumps(items))
    return evaluate(challenge, artifact, ctx, tmp_path / "evaluations", timeout_s=60)


def test_dev_heldout_and_full_scores_aggregate_as_the_scorer_does(tmp_path):
    # Two groups of different sizes: the value is a mean of group means, not a mean over all items.
    items = {"big": {f"b{i}": float(i % 3 == 0) for i in range(60)}, "small": {f"s{i}": i / 10 for i in range(10)}}
    record = _score(tmp_path, items)
    assert record.ok
    parts = {g: {p: {k: v for k, v in values.items() if is_heldout(g, k) == (p == "heldout")}
                 for p in ("dev", "heldout")} for g, values in items.items()}

    def mean_of_groups(part: str) -> float:
        means = [sum(p[part].values()) / len(p[part]) for p in parts.values()]
        return sum(means) / len(means)

    assert record.score == pytest.approx(mean_of_groups("dev"))
    assert record.heldout_score == pytest.approx(mean_of_groups("heldout"))
    full = sum(sum(v.values()) / len(v) for v in items.values()) / 2
    assert record.full_score == pytest.approx(full) and record.full == record.full_score
    # Within each group, the parts weighted by their item counts give back the group's full mean.
    for group, split in record.split["per_group"].items():
        n_dev, n_held = len(parts[group]["dev"]), len(parts[group]["heldout"])
        assert (split["dev"] * n_dev + split["heldout"] * n_held) / (n_dev + n_held) == pytest.approx(split["full"])
    held = record.split["heldout_items"] / 70
    assert abs(held - HELDOUT_FRACTION) < 0.15 and record.split["dev_items"] + record.split["heldout_items"] == 70
    # Agents see the dev part's per-group scores and the scorer's other details; all of its own are kept apart.
    assert record.details == {"groups": ["big", "small"], "dev_items": record.split["dev_items"],
                              "dev_per_group": {g: s["dev"] for g, s in record.split["per_group"].items()}}
    assert record.split["scorer_details"]["per_task"] == pytest.approx({"big": 20 / 60, "small": 0.45})
    saved = json.loads((tmp_path / "evaluations" / f"{record.id}.json").read_text())
    assert saved["heldout_score"] == record.heldout_score and saved["score"] == record.score


def test_the_split_is_the_same_every_time(tmp_path):
    items = {"all": {f"q{i}": float(i % 2) for i in range(40)}}
    first, second = _score(tmp_path, items), _score(tmp_path, items)
    assert (first.score, first.heldout_score) == (second.score, second.heldout_score)


def test_items_that_do_not_reproduce_the_value_give_no_split(tmp_path):
    record = _score(tmp_path, {"all": {f"q{i}": 0.5 for i in range(20)}}, preset="off")  # value = 1.5
    assert record.ok and record.score == record.full_score == 1.5 and record.heldout_score is None
    assert "not the scorer's value" in record.split["note"]


def test_a_scorer_without_items_scores_dev_only_and_says_so(tmp_path):
    write_challenge(tmp_path / "challenges", "plain")
    challenge = load_challenge(tmp_path / "challenges" / "plain")
    ctx = ScoreContext("plain", "smoke", tmp_path / "data", tmp_path / "private", tmp_path / "scratch")
    (tmp_path / "answer.txt").write_text("0.4")
    record = evaluate(challenge, tmp_path / "answer.txt", ctx, tmp_path / "evaluations", timeout_s=60)
    assert record.ok and record.score == record.full_score == 0.4 and record.heldout_score is None
    assert record.split["note"] == NO_ITEMS and record.details == {"source": "file"}
