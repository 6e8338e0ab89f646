"""The crew on scripted models: through the protocol-exact API server (tests/apiserver) for what the model
does, through `replay:` for fast retries of API faults and for replaying a run's trace."""

from __future__ import annotations

import json

from crew.errors import EXIT_DONE, EXIT_INTERRUPTED
from tests.crew.helpers import ENGINEER_OK, SUPERVISOR_OK, call, kinds, run_crew


def test_replayed_crew_submits_the_harness_score_and_traces_every_step(tmp_path, monkeypatch):
    code, run, result, events = run_crew(tmp_path, monkeypatch,
                                         {"supervisor": SUPERVISOR_OK, "engineer": ENGINEER_OK})
    assert code == EXIT_DONE
    assert result["status"] == "submitted" and result["score"] == 0.75
    assert result["submission"]["evaluation"] == "eval-0001" and result["steps"] == 5
    record = json.loads((run.evaluations / "eval-0001.json").read_text())
    assert record["score"] == 0.75 and record["artifact"].endswith("workspace/answer.txt")
    responses = kinds(events, "model_response")
    assert [e["agent"] for e in responses] == ["supervisor", "engineer", "engineer", "engineer", "supervisor"]
    assert len(kinds(events, "tool_results")) == len(responses)
    assert [e["kind"] for e in events][-3:] == ["crew_usage", "final_pick", "run_finished"]
    state = json.loads((run.state / "latest.json").read_text())
    assert state["step"] == 5 and "supervisor" in state["contexts"]


def test_malformed_unknown_and_raising_tool_calls_become_observations(tmp_path, monkeypatch, api_server):
    engineer = [
        {"tool_calls": [{"name": "write_file", "arguments": '{"path": "answer.txt", "content": '}]},
        call("launch_rockets", count=3),
        *ENGINEER_OK,
    ]
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": engineer})
    # OpenAI's API can return arguments that are not JSON (Anthropic's always returns an object).
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server,
                                       model=f"openai:gpt-4.1-2025-04-14@{server.openai_base_url}")
    assert code == EXIT_DONE and result["status"] == "submitted"  # the engineer corrected itself
    malformed, unknown = [e["results"][0] for e in kinds(events, "tool_results") if e["agent"] == "engineer"][:2]
    assert malformed["is_error"] and "Error" in malformed["content"]
    assert unknown["is_error"] and "launch_rockets" in unknown["content"]


def test_a_tool_that_raises_is_an_error_observation(tmp_path, monkeypatch, api_server):
    engineer = [call("write_file", path="answer.txt", content="0.75"), call("evaluate", artifact_path="answer.txt"),
                call("record_outcome", hypothesis_id="h-does-not-exist", evaluation_id="eval-0001"),
                *ENGINEER_OK[2:]]
    code, _, _, events = run_crew(tmp_path, monkeypatch, None,
                                   server=api_server({"supervisor": SUPERVISOR_OK, "engineer": engineer}))
    assert code == EXIT_DONE
    raised = [e["results"][0] for e in kinds(events, "tool_results") if e["results"][0]["name"] == "record_outcome"]
    assert raised[0]["is_error"] and "h-does-not-exist" in raised[0]["content"]


def test_a_429_storm_is_retried_then_succeeds(tmp_path, monkeypatch):
    engineer = [{"error": "rate_limit"}] * 3 + [{"error": "overloaded"}] + ENGINEER_OK
    code, _, result, events = run_crew(tmp_path, monkeypatch, {"supervisor": SUPERVISOR_OK, "engineer": engineer})
    assert code == EXIT_DONE and result["status"] == "submitted"
    retries = kinds(events, "model_retry")
    assert [r["attempt"] for r in retries] == [1, 2, 3, 4] and all(r["agent"] == "engineer" for r in retries)


def test_an_outage_ends_the_run_interrupted_and_resumable(tmp_path, monkeypatch):
    code, run, result, events = run_crew(tmp_path, monkeypatch, {"supervisor": [{"error": "outage"}] * 20})
    assert code == EXIT_INTERRUPTED
    assert result["status"] == "no_submission" and "outage" in result["note"]
    assert len(kinds(events, "model_retry")) >= 3
    assert (run.root / "report.md").is_file()


def test_a_number_with_no_record_behind_it_is_flagged(tmp_path, monkeypatch, api_server):
    supervisor = [
        call("delegate", "Last time we reached a score of 0.93, so this is easy.", role="engineer",
             subtask="Write 0.75 to answer.txt and evaluate it.", minutes=1),
        call("submit", "The engineer's evaluation gave 0.75, which I submit.", evaluation_id="eval-0001",
             rationale="verified"),
    ]
    code, run, result, events = run_crew(tmp_path, monkeypatch, None,
                                         server=api_server({"supervisor": supervisor, "engineer": ENGINEER_OK}))
    assert code == EXIT_DONE
    flagged = kinds(events, "unverified_claim")
    assert [f["value"] for f in flagged] == ["0.93"]  # 0.75 has a record behind it
    assert result["unverified_claims"][0]["value"] == "0.93"
    assert "0.93" in (run.root / "report.md").read_text()


def test_a_repeating_worker_is_stopped_asked_for_its_report_and_the_supervisor_told(tmp_path, monkeypatch, api_server):
    engineer = [call("run_bash", command="echo same", timeout_s=10)] * 3 + [
        call("report", changed="nothing", commands="echo same", evaluations=[], learned="it echoes", proposes="stop")]
    supervisor = [call("delegate", role="engineer", subtask="Look around.", minutes=1), {"text": "Nothing to do."}]
    # The script ends after the supervisor has read the report: the run then stops resumable, unsubmitted.
    server = api_server({"supervisor": supervisor, "engineer": engineer}, allow_script_problems=True)
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_INTERRUPTED and result["status"] == "no_submission"
    stopped = kinds(events, "worker_stopped")
    assert stopped and "repeated the same actions" in stopped[0]["reason"]
    engineer_calls = [e for e in kinds(events, "model_response") if e["agent"] == "engineer"]
    assert len(engineer_calls) == 4 and engineer_calls[-1]["response"]["tool_calls"][0]["name"] == "report"
    journal = {e["id"]: e["message"] for e in map(json.loads, (run.state / "messages.jsonl").read_text().splitlines())}
    supervisor_ids = json.loads((run.state / "latest.json").read_text())["contexts"]["supervisor"]["ids"]
    told = [journal[i]["text"] for i in supervisor_ids if "Report from the engineer" in journal[i]["text"]]
    assert told and "repeated the same actions" in told[0] and "it echoes" in told[0]


def test_replaying_a_finished_runs_trace_reproduces_it(tmp_path, monkeypatch):
    script = {"supervisor": [call("update_plan", phase="exploration", status="try 0.75", minutes=1), *SUPERVISOR_OK],
              "engineer": ENGINEER_OK}
    _, first, first_result, first_events = run_crew(tmp_path, monkeypatch, script, name="first")
    code, _, again, events = run_crew(tmp_path, monkeypatch, str(first.trace), name="again")

    def decisions(evs):
        return [(e["agent"], [(c["name"], c["arguments"]) for c in e["response"].get("tool_calls", [])],
                 e["response"].get("text")) for e in kinds(evs, "model_response")]

    assert code == EXIT_DONE
    assert decisions(events) == decisions(first_events)
    for key in ("status", "score", "steps"):
        assert again[key] == first_result[key]
    assert again["submission"]["sha256"] == first_result["submission"]["sha256"]
