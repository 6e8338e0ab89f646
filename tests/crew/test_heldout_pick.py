"""The final pick, through a scripted crew run end to end: the held-out part overrules a dev lead, and no
held-out figure ever reaches a model."""

from __future__ import annotations

import json

import pytest

from challenges.framework.split import is_heldout
from crew.errors import EXIT_DONE
from tests.crew.helpers import ENGINEER_OK, SUPERVISOR_OK, call, run_crew
from tests.foundation.helpers import write_challenge

ITEMS = [f"q{i:02d}" for i in range(40)]
# The submission holds one value per item, in percent (so the agent's own file never spells a score); the score
# is their mean, and the scorer gives the items.
ITEM_SCORER = """\
import json
from challenges import Score

def score(submission, ctx):
    values = {item: percent / 100 for item, percent in json.loads(submission.read_text()).items()}
    return Score(sum(values.values()) / len(values), {"items": len(values)}, items={"all": values})
"""
# (dev value, held-out value) per answer: eval-0001 leads on dev and fails on the held-out items; eval-0004
# is best on held-out items but not among the top 3 by dev, so it is never a candidate.
ANSWERS = [(0.9, 0.1234), (0.8, 0.7321), (0.7, 0.6543), (0.1, 0.9512)]


def _answer(dev: float, held: float) -> str:
    return json.dumps({item: round(100 * (held if is_heldout("all", item) else dev), 2) for item in ITEMS})


def _full(dev: float, held: float) -> float:
    return sum(held if is_heldout("all", item) else dev for item in ITEMS) / len(ITEMS)


def test_the_held_out_part_picks_among_the_top_dev_records_and_never_reaches_a_model(tmp_path, monkeypatch,
                                                                                      api_server):
    write_challenge(tmp_path / "challenges", "toy", scorer=ITEM_SCORER)
    engineer = []
    for n, (dev, held) in enumerate(ANSWERS, start=1):
        engineer += [call("write_file", path=f"answer{n}.json", content=_answer(dev, held)),
                     call("evaluate", artifact_path=f"answer{n}.json", hypothesis=f"answer {n}")]
    engineer.append(call("report", changed="answers", commands="none", evaluations=["eval-0001"],
                         learned="eval-0001 has the best dev score", proposes="submit eval-0001"))
    supervisor = [call("delegate", role="engineer", subtask="Evaluate the four answers.", minutes=1),
                  call("submit", evaluation_id="eval-0001", rationale="best dev score")]
    server = api_server({"supervisor": supervisor, "engineer": engineer})
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server)

    assert code == EXIT_DONE and result["status"] == "submitted"
    pick = result["pick"]
    assert pick["by"] == "held-out" and pick["evaluation"] == result["submission"]["evaluation"] == "eval-0002"
    assert pick["dev_best"] == pick["supervisor_choice"] == "eval-0001"
    assert pick["differs_from_dev_best"] and pick["differs_from_supervisor"]
    assert [c["evaluation"] for c in pick["candidates"]] == ["eval-0001", "eval-0002", "eval-0003"]
    assert result["scores"]["dev"] == pytest.approx(0.8) and result["scores"]["heldout"] == pytest.approx(0.7321)
    assert result["score"] == result["scores"]["full"] == pytest.approx(_full(0.8, 0.7321))  # the headline: full

    # What the models were sent (every request, tool results and briefings included) and what the tools
    # returned hold the dev scores and never a held-out or full one, which would give the held-out away.
    sent = json.dumps([exchange.request for exchange in server.requests()])
    returned = json.dumps([e["results"] for e in events if e["kind"] == "tool_results"])
    assert "0.9000" in returned  # the engineer saw eval-0001's dev score
    for dev, held in ANSWERS:
        for hidden in (held, _full(dev, held)):
            for text in (f"{hidden:.4f}", f"{hidden:.3f}", repr(hidden)):
                assert text not in sent and text not in returned, text
    assert "0.1234" not in json.dumps([e for e in events if e["kind"] == "final_pick"])
    assert "eval-0002" in (run.root / "report.md").read_text().split("## Final pick")[1]


def test_without_per_item_results_the_pick_is_the_supervisors_as_before(tmp_path, monkeypatch):
    code, run, result, _ = run_crew(tmp_path, monkeypatch, {"supervisor": SUPERVISOR_OK, "engineer": ENGINEER_OK})
    assert code == EXIT_DONE and result["submission"]["evaluation"] == "eval-0001"
    assert result["scores"] == {"dev": 0.75, "heldout": None, "full": 0.75,
                                "split": {"dev_items": 0, "heldout_items": 0,
                                          "note": "no per-item results: no held-out pick"}}
    assert result["pick"]["by"] == "dev" and "no per-item results" in result["pick"]["note"]
    assert not result["pick"]["differs_from_supervisor"]
