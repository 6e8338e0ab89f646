"""The crew against the protocol-exact API server (tests/apiserver), through our Anthropic client and the
official SDK over HTTP: each defect of issue 11 that a real model exposed. Any request the real API would
refuse fails the test (the fixture's teardown)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from crew.errors import EXIT_DONE, EXIT_INTERRUPTED
from crew.policy.runner import resume_run
from tests.crew.helpers import API_MODEL, ENGINEER_OK, SUPERVISOR_OK, call, kinds, run_crew


def tool_results(events: list[dict], name: str) -> list[dict]:
    return [r for e in kinds(events, "tool_results") for r in e["results"] if r["name"] == name]


def test_the_happy_path_through_the_real_client(tmp_path, monkeypatch, api_server):
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": ENGINEER_OK})
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75
    assert result["tokens"]["cache_read"] > 0 and result["cost_usd"] > 0  # the server's usage, priced
    first = server.requests("supervisor")[0].last_user_text()
    assert "## Jobs" in first and "baseline" in first  # what the supervisor sees each turn
    assert (run.workspace / "data").exists()


def test_an_artifact_changed_after_scoring_is_not_what_is_submitted(tmp_path, monkeypatch, api_server):
    engineer = [call("write_file", path="answer.txt", content="0.75"), call("evaluate", artifact_path="answer.txt"),
                call("write_file", path="answer.txt", content="0.99"),  # after the score: not scored
                ENGINEER_OK[2]]
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": engineer})
    code, run, result, _ = run_crew(tmp_path, monkeypatch, None, server=server)
    record = json.loads((run.evaluations / "eval-0001.json").read_text())
    submitted = Path(result["submission"]["path"])
    assert code == EXIT_DONE and result["score"] == 0.75
    assert submitted.read_text() == "0.75" and submitted != run.workspace / "answer.txt"
    assert result["submission"]["sha256"] == record["sha256"] == hashlib.sha256(b"0.75").hexdigest()


def test_an_api_error_still_submits_the_best_record_and_the_run_resumes(tmp_path, monkeypatch, api_server):
    """A 400 (not retried) after a verified evaluation: submitted, exit 3, and `resume` finishes the run."""
    supervisor = [SUPERVISOR_OK[0], {"fault": 400}, SUPERVISOR_OK[1]]
    server = api_server({"supervisor": supervisor, "engineer": ENGINEER_OK})
    code, run, result, _ = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_INTERRUPTED
    assert result["status"] == "submitted" and result["score"] == 0.75 and "prompt is too long" in result["note"]
    assert result["resumable"]
    code, _ = resume_run(run.root)
    assert code == EXIT_DONE
    result = json.loads(run.result.read_text())
    assert result["status"] == "submitted" and result["submission"]["evaluation"] == "eval-0001"
    assert result["resumes"] == 1 and not result["resumable"]


def test_two_delegations_in_one_turn_start_two_subtasks_and_a_third_beyond_the_slots_is_refused(
        tmp_path, monkeypatch, api_server):
    engineer = {"name": "delegate", "arguments": {"role": "engineer", "subtask": "Write 0.75 to answer.txt and "
                                                  "evaluate it.", "minutes": 1}}
    three = {"tool_calls": [engineer, {"name": "delegate", "arguments": {"role": "scout", "subtask": "Search.",
                                                                          "minutes": 1}}, engineer]}
    scout = [call("recall", query="toy challenge"),
             call("report", changed="none", commands="none", evaluations=[], learned="nothing", proposes="go on")]
    slow_engineer = [call("run_bash", command="sleep 2", timeout_s=30), *ENGINEER_OK]
    supervisor = [three, call("wait", minutes=5), SUPERVISOR_OK[1]]
    server = api_server({"supervisor": supervisor, "engineer": slow_engineer, "scout": scout})
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75
    first, second, third = tool_results(events, "delegate")
    assert not first["is_error"] and not second["is_error"]
    assert third["content"].startswith("Not delegated: 1 engineer subtask(s) already under way (one per GPU")
    assert [e["subtask_id"] for e in kinds(events, "subtask_started")] == ["engineer-1", "scout-2"]
    # the scout's whole subtask ran while the engineer's was under way
    order = [(e["kind"], e.get("subtask_id")) for e in events if e["kind"] in ("subtask_started", "subtask_finished")]
    assert order == [("subtask_started", "engineer-1"), ("subtask_started", "scout-2"),
                     ("subtask_finished", "scout-2"), ("subtask_finished", "engineer-1")]
    briefings = [r.last_user_text() for r in server.requests("supervisor")]
    assert "- engineer-1: Write 0.75" in briefings[1]  # the supervisor sees who is still at work


def test_the_tool_calls_of_one_turn_run_in_order(tmp_path, monkeypatch, api_server):
    in_order = {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "0.75"}},
                               {"name": "run_bash", "arguments": {"command": "cat answer.txt", "timeout_s": 30}},
                               {"name": "evaluate", "arguments": {"artifact_path": "answer.txt"}}]}
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": [in_order, ENGINEER_OK[2]]})
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["score"] == 0.75
    assert tool_results(events, "run_bash")[0]["content"].rstrip().endswith("0.75")


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_a_tool_call_cut_off_at_max_tokens_is_asked_again_not_run(tmp_path, monkeypatch, api_server, api):
    cut = {"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "0.7" + "5" * 50}}],
           "stop_reason": "max_tokens"}
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": [cut, *ENGINEER_OK]})
    model = API_MODEL if api == "anthropic" else f"openai:gpt-4.1-2025-04-14@{server.openai_base_url}"
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server, model=model)
    assert code == EXIT_DONE and result["score"] == 0.75
    first, again = server.requests("engineer")[:2]
    limit = "max_tokens"  # Anthropic's, and the one every OpenAI-compatible server (@BASE_URL) takes
    assert again.request[limit] > first.request[limit]
    assert "cut off at the output-token limit" in again.last_user_text()
    assert len(tool_results(events, "write_file")) == 1  # only the complete call ran
    assert kinds(events, "model_response")[1]["truncated_retries"] == 1


def test_waiting_for_a_job_spends_no_model_calls_and_a_watching_worker_is_not_stopped(tmp_path, monkeypatch,
                                                                                       api_server):
    job = "for i in $(seq 8); do echo progress: $i/8; sleep 0.4; done; echo 0.75 > answer.txt"
    poll = {**call("job_status", job_id="001-train"), "delay_s": 0.5}  # the model answers after 0.5 s
    engineer = [call("start_job", command=job, name="train"),
                poll, poll, poll,  # three polls of an advancing log (1/8, 2/8, 3/8): not a repeat
                call("wait_for_job", job_id="001-train", until="exit", max_minutes=1),
                call("evaluate", artifact_path="answer.txt"), ENGINEER_OK[2]]
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": engineer})
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["score"] == 0.75
    assert not kinds(events, "worker_stopped")
    [waited] = tool_results(events, "wait_for_job")
    assert "ended" in waited["content"] and "8/8" in waited["content"]


def test_the_default_cost_cap_is_said_and_frozen_in_run_toml(tmp_path, monkeypatch, api_server):
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": ENGINEER_OK})
    _, run, _, _ = run_crew(tmp_path, monkeypatch, None, server=server, budget="30m")
    assert "max_cost_usd = 1.0" in run.run_toml.read_text()  # $2 per budget hour, at least $1


def test_every_evaluation_is_an_experiment_with_its_code_parent_and_lesson(tmp_path, monkeypatch, api_server):
    engineer = [call("write_file", path="answer.txt", content="0.5"),
                call("evaluate", artifact_path="answer.txt", hypothesis="a first guess", kind="draft"),
                call("note_lesson", evaluation_id="eval-0001", lesson="0.5 is a floor"),
                call("write_file", path="answer.txt", content="0.75"),
                call("evaluate", artifact_path="answer.txt", hypothesis="a larger number scores more",
                     parent="eval-0001", kind="improve"),
                call("report", changed="answer.txt", commands="", evaluations=["eval-0001", "eval-0002"],
                     learned="bigger is better", proposes="submit eval-0002")]
    supervisor = [SUPERVISOR_OK[0], call("submit", evaluation_id="eval-0002", rationale="best")]
    server = api_server({"supervisor": supervisor, "engineer": engineer})
    code, run, result, _ = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["score"] == 0.75
    first, second = (json.loads((run.evaluations / f"eval-000{i}.json").read_text())["experiment"] for i in (1, 2))
    assert first["kind"] == "draft" and first["lesson"] == "0.5 is a floor" and first["parent"] is None
    assert second["kind"] == "improve" and second["parent"] == "eval-0001"
    scored = subprocess.run(["git", "--git-dir", str(run.root / "workspace.git"), "show",
                             f"{first['commit']}:answer.txt"], cwd=run.workspace,
                            capture_output=True, text=True, check=True).stdout
    assert scored == "0.5" and first["commit"] != second["commit"]  # the exact code behind each score
    briefing = server.requests("supervisor")[-1].last_user_text()
    assert "eval-0002 [improve of eval-0001] score 0.7500" in briefing and "lesson: 0.5 is a floor" in briefing
    table = subprocess.run([shutil.which("research-crew"), "experiments", str(run.root)], capture_output=True,
                           text=True, env={**os.environ, "COLUMNS": "250"})
    assert table.returncode == 0 and "improve" in table.stdout and "a larger number scores more" in table.stdout
    # A second run on the same challenge starts from what the first one learnt.
    again = api_server({"supervisor": [{"text": "Read."}]}, allow_script_problems=True)
    run_crew(tmp_path, monkeypatch, None, server=again, name="second")
    first_briefing = again.requests("supervisor")[0].last_user_text()
    assert "Memories of earlier runs" in first_briefing and "0.5 is a floor" in first_briefing
