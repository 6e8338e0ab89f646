"""What a weak or local model does to a run, through the protocol-exact API server and the real clients: an
endless answer, an outage longer than a few minutes, and a turn whose call failed, then resumed."""

from __future__ import annotations

import json

from crew.agent.models import openai_client
from crew.agent.models.openai_client import LOCAL_MAX_OUTPUT_TOKENS
from crew.agent.specs import parse_spec
from crew.errors import EXIT_DONE, EXIT_INTERRUPTED
from crew.policy.floor import FLOOR_ID
from crew.policy.runner import model_lines, resume_run
from tests.crew.helpers import ENGINEER_OK, SUPERVISOR_OK, kinds, run_crew, toy_with_recipe


def test_a_hung_request_is_abandoned_and_an_endless_answer_cut_not_sent_again(tmp_path, monkeypatch, api_server):
    """A local server that hangs (answers after 60 s, past the request's timeout), then a runaway answer."""
    monkeypatch.setattr(openai_client, "BASE_TIMEOUT_S", 10.0)  # plus the prompt's and output's share
    monkeypatch.setattr(openai_client, "PREFILL_TOKENS_PER_S", 1e9)
    monkeypatch.setattr(openai_client, "DECODE_TOKENS_PER_S", 1e9)
    hung = {"text": "too late", "delay_s": 60}
    endless = {"text": "Let me think." + "\n" * 100_000}  # a small model's runaway newlines
    server = api_server({"supervisor": [hung, endless, *SUPERVISOR_OK], "engineer": ENGINEER_OK})
    model = f"openai:qwen2.5-coder-1.5b-instruct@{server.openai_base_url}"
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server, model=model)

    assert code == EXIT_DONE and result["score"] == 0.75
    (retry,) = kinds(events, "model_retry")
    assert "timed out" in retry["error"]
    assert result["cost_usd"] == 0 and result["tokens"]["output"] > 0  # a local model: counted, not billed
    assert "$0 per token" in model_lines(parse_spec(model), parse_spec(model), None)[0]
    first, second = server.requests("supervisor")[1:3]
    assert all(r.request["max_tokens"] == LOCAL_MAX_OUTPUT_TOKENS for r in server.requests())
    assert kinds(events, "model_response")[0]["cut"] is True
    assert "cut off at the output-token limit" in second.last_user_text()
    kept = [m["content"] for m in second.request["messages"] if m["role"] == "assistant"]
    assert len(kept) == 1 and len(kept[0]) < 2_100  # not the 16k characters the server sent back


def test_an_outage_longer_than_eight_attempts_is_waited_out(tmp_path, monkeypatch, api_server):
    """Until issue 23 a call gave up after 8 attempts (about 148 s with real waits); now the window is a time:
    10 minutes by default, set with --retry-window. Here the server asks for short waits (Retry-After)."""
    outage = [{"fault": 529, "retry_after": 0.01}] * 12
    server = api_server({"supervisor": [*outage, *SUPERVISOR_OK], "engineer": ENGINEER_OK})
    code, _, result, events = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75
    assert len(kinds(events, "model_retry")) == 12


def test_an_outage_past_the_window_stops_resumable_and_still_submits_experiment_0(tmp_path, monkeypatch,
                                                                                 api_server):
    toy_with_recipe(tmp_path)
    server = api_server({"supervisor": [{"fault": 529, "retry_after": 5}]})  # a wait past the 1 s window
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server, retry_window="1s")
    assert code == EXIT_INTERRUPTED and result["resumable"] and "model API outage" in result["note"]
    assert not kinds(events, "model_retry") and len(server.requests()) == 1
    assert result["status"] == "submitted" and result["submission"]["evaluation"] == FLOOR_ID  # the floor


def test_with_nothing_scored_the_report_states_the_metric_and_why(tmp_path, monkeypatch, api_server):
    server = api_server({"supervisor": [{"fault": 400}]})
    code, run, result, _ = run_crew(tmp_path, monkeypatch, None, server=server)
    report = (run.root / "report.md").read_text()
    assert code == EXIT_INTERRUPTED and result["status"] == "no_submission"
    assert "value (max)" in report and "stopped by an error at step 1" in report  # was `metric: ? (?)`


def test_a_resumed_run_never_sends_the_briefing_whose_call_failed(tmp_path, monkeypatch, api_server):
    supervisor = [SUPERVISOR_OK[0], {"fault": 400}, SUPERVISOR_OK[1]]
    server = api_server({"supervisor": supervisor, "engineer": ENGINEER_OK})
    code, run, _, _ = run_crew(tmp_path, monkeypatch, None, server=server)
    assert code == EXIT_INTERRUPTED
    assert resume_run(run.root)[0] == EXIT_DONE
    failed, resumed = server.requests("supervisor")[1:3]
    roles = [m["role"] for m in resumed.request["messages"]]
    assert roles == [m["role"] for m in failed.request["messages"]]  # the failed briefing replaced, not added
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))  # the roles alternate
    # the failed briefing's news (the engineer's report) is in the one briefing sent after the resume
    assert "Report from the engineer" in failed.last_user_text()
    assert "Report from the engineer" in resumed.last_user_text()
    assert json.dumps(resumed.request["messages"]).count("Report from the engineer") == 1
    briefings = [json.dumps(r.request["messages"]).count("## Budget") for r in (failed, resumed)]
    assert briefings[0] == briefings[1]
