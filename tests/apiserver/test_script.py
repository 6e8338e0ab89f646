"""Scripts: the replay formats load (YAML, a run's trace.jsonl), and a mistyped item is named."""

from __future__ import annotations

import json

import anthropic
import pytest
import yaml

from tests.apiserver.script import Script, ScriptError, crew_role


def test_a_yaml_script_and_a_trace_play(api_server, tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"engineer": [{"text": "from yaml"}]}))
    trace = tmp_path / "trace.jsonl"
    response = {"tool_calls": [{"id": "toolu_01Trace", "name": "read_file", "arguments": '{"path": "a"}'}]}
    trace.write_text(json.dumps({"kind": "model_response", "agent": "engineer", "response": response}) + "\n")
    for path, check in ((script, lambda m: m.content[0].text == "from yaml"),
                        (trace, lambda m: m.content[0].id == "toolu_01Trace" and m.content[0].input == {"path": "a"})):
        server = api_server(path)
        client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
        answer = client.messages.create(model="claude-sonnet-4-6", max_tokens=100, system="You are the engineer.",
                                        messages=[{"role": "user", "content": "Go."}])
        assert check(answer)


def test_a_mistyped_item_is_named():
    with pytest.raises(ScriptError, match=r"engineer\[1\]: unknown keys \['tool_call'\]"):
        Script.load({"engineer": [{"text": "ok"}, {"tool_call": {"name": "x"}}]})
    with pytest.raises(ScriptError, match=r"supervisor\[0\]: unknown error 'timeout'"):
        Script.load({"supervisor": [{"error": "timeout"}]})


def test_crew_roles_come_from_the_system_prompt():
    assert crew_role("You are the supervisor of a research crew") == "supervisor"
    assert crew_role("You are the scout. You find ideas") == "scout"
    assert crew_role("You are a helpful assistant.") is None
