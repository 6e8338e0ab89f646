"""Experiment 0, the floor (crew/policy/floor.py), and models that write their tool calls as text
(crew/agent/models/text_tools.py), through the protocol-exact API server and the real clients."""

from __future__ import annotations

import json

from crew.errors import EXIT_DONE
from crew.policy.floor import FLOOR_ID, FLOOR_JOB
from tests.crew.helpers import ENGINEER_OK, SUPERVISOR_OK, kinds, run_crew, toy_with_recipe


def fenced(name: str, **arguments) -> dict:
    return {"text": f"I will call {name}.\n```json\n{json.dumps({'name': name, 'arguments': arguments})}\n```"}


def tagged(name: str, **arguments) -> dict:
    return {"text": f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"}


def test_a_model_that_never_makes_a_tool_call_still_submits_the_floor_and_is_told(tmp_path, monkeypatch, api_server):
    toy_with_recipe(tmp_path)
    plan = {"phase": "baseline", "status": "run it"}
    delegate = {"role": "engineer", "subtask": "Write 0.75 to answer.txt and evaluate it.", "minutes": 1}
    openai_shaped = {"type": "function", "function": {"name": "wait", "arguments": '{"minutes": 1}'}}
    supervisor = [fenced("update_plan", **plan), tagged("delegate", **delegate), {"text": json.dumps(openai_shaped)},
                  {"text": "I have nothing to add."}, fenced("submit", evaluation_id=FLOOR_ID, rationale="floor")]
    server = api_server({"supervisor": supervisor})
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server)

    assert code == EXIT_DONE and result["status"] == "submitted"
    assert result["submission"]["evaluation"] == FLOOR_ID and result["score"] == 0.5
    assert "the model made no valid tool call in 5 turns" in result["note"]
    assert "no valid tool call in 5 turns" in (run.root / "report.md").read_text()
    record = json.loads((run.evaluations / f"{FLOOR_ID}.json").read_text())
    assert record["experiment"]["job"] == FLOOR_JOB and record["frozen"]
    assert (run.jobs / FLOOR_JOB / "job.json").is_file() and not (run.workspace / "submission").exists()
    # The supervisor hears of experiment 0 first, and after each call written as text, that it was not run.
    briefings = [r.last_user_text() for r in server.requests("supervisor")]
    assert f"Experiment 0 ({FLOOR_ID})" in briefings[0] and "was NOT run" not in briefings[0]
    assert "update_plan as text, so it was NOT run" in briefings[1]
    assert "delegate as text, so it was NOT run" in briefings[2]
    assert "wait as text, so it was NOT run" in briefings[3]
    assert "was NOT run" not in briefings[4]  # plain prose is no call
    assert [e.get("text_calls") for e in kinds(events, "model_response")] == [1, 1, 1, None, 1]
    assert not kinds(events, "subtask_started")


def test_in_text_tools_mode_the_crew_runs_calls_written_as_text(tmp_path, monkeypatch, api_server):
    toy_with_recipe(tmp_path)

    def as_text(answer: dict) -> dict:
        (tool,) = answer["tool_calls"]
        return tagged(tool["name"], **tool["arguments"])

    wrong = tagged("evaluate", artifact="answer.txt")  # a wrong argument name: refused as a native call would be
    engineer = [as_text(ENGINEER_OK[0]), wrong, *map(as_text, ENGINEER_OK[1:])]
    server = api_server({"supervisor": [as_text(a) for a in SUPERVISOR_OK],
                         "engineer": engineer})
    model = f"openai:qwen2.5-coder@{server.openai_base_url}?tools=text"
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server, model=model)

    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75
    assert result["submission"]["evaluation"] == "eval-0001" and result["cost_usd"] == 0
    assert (run.evaluations / f"{FLOOR_ID}.json").is_file()  # experiment 0 ran beside the crew
    for exchange in server.requests():  # tools travel as text: no native tools, no tool messages
        assert "tools" not in exchange.request and all(m["role"] != "tool" for m in exchange.request["messages"])
        assert exchange.request["max_tokens"] > 0
    results = [r for e in kinds(events, "tool_results") for r in e["results"]]
    refused = next(r for r in results if r["name"] == "evaluate")
    assert refused["is_error"] and "artifact_path" in refused["content"]
    told = server.requests("engineer")[2].last_user_text()
    assert "[result of evaluate] (error)" in told
    assert "# Tools" in server.requests("engineer")[0].system
