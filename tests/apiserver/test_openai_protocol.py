"""The stand-in Chat Completions API through the official openai SDK: rules, faults, cached tokens, truncation."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.chat import ChatCompletion

MODEL = "gpt-4.1"
SYSTEM = {"role": "system", "content": "You are the engineer. Work in the workspace."}
TOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
CALL = {"id": "call_A", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "log"}'}}


def user(text):
    return {"role": "user", "content": text}


def called(*calls):
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def tool(call_id, text="loss 3.4"):
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def create(server, **request) -> ChatCompletion:
    body = {"model": MODEL, "tools": [TOOL], **request}
    body = {k: v for k, v in body.items() if v is not None}
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="test-key", max_retries=0)
    return client.post("/chat/completions", body=body, cast_to=ChatCompletion)


ASKED = [SYSTEM, user("Why did training stall?"), called(CALL)]
RULES = [
    ("every tool_call answered before the next message",
     {"messages": [*ASKED, user("What now?")]},
     ("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
      "The following tool_call_ids did not have response messages: call_A", None),
     {"messages": [*ASKED, tool("call_A"), user("What now?")]}),
    ("every parallel tool_call answered",
     {"messages": [*ASKED[:2], called(CALL, {**CALL, "id": "call_B"}), tool("call_B")]},
     ("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
      "The following tool_call_ids did not have response messages: call_A", None),
     {"messages": [*ASKED[:2], called(CALL, {**CALL, "id": "call_B"}), tool("call_B"), tool("call_A")]}),
    ("no tool message without tool_calls",
     {"messages": [SYSTEM, user("Go."), tool("call_A")]},
     ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
      "messages.[2].role"),
     {"messages": [*ASKED, tool("call_A")]}),
    ("model required",
     {"model": None, "messages": [SYSTEM, user("Go.")]}, ("you must provide a model parameter", None),
     {"messages": [SYSTEM, user("Go.")]}),
    ("messages not empty",
     {"messages": []},
     ("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages"),
     {"messages": [SYSTEM, user("Go.")]}),
    ("function names match the pattern",
     {"tools": [{"type": "function", "function": {**TOOL["function"], "name": "files.read"}}],
      "messages": [SYSTEM, user("Go.")]},
     ("Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern "
      "'^[a-zA-Z0-9_-]+$'.", "tools[0].function.name"),
     {"messages": [SYSTEM, user("Go.")]}),
    ("function parameters an object schema",
     {"tools": [{"type": "function", "function": {**TOOL["function"], "parameters": {"type": "string"}}}],
      "messages": [SYSTEM, user("Go.")]},
     ("Invalid schema for function 'read_file': schema must be a JSON Schema of 'type: \"object\"', got "
      "'type: \"string\"'.", "tools[0].function.parameters"),
     {"messages": [SYSTEM, user("Go.")]}),
    ("tool_choice needs tools",
     {"tools": None, "tool_choice": "required", "messages": [SYSTEM, user("Go.")]},
     ("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice"),
     {"tool_choice": "required", "messages": [SYSTEM, user("Go.")]}),
]


@pytest.mark.parametrize(("rule", "bad", "error", "good"), RULES, ids=[r[0] for r in RULES])
def test_rule_refuses_then_accepts(api_server, rule, bad, error, good):
    server = api_server({"engineer": [{"text": "fine"}]}, expect_violations=True)
    with pytest.raises(openai.BadRequestError) as refused:
        create(server, **bad)
    message, param = error
    assert refused.value.status_code == 400
    assert refused.value.body["message"] == message and refused.value.body["param"] == param
    assert refused.value.body["type"] == "invalid_request_error"
    assert create(server, **good).choices[0].message.content == "fine"
    assert [e.errors[0].message for e in server.violations] == [message]


def test_tool_round_trip(api_server):
    server = api_server({"engineer": [
        {"thought": "Reading the log.", "tool_calls": [{"name": "read_file", "arguments": {"path": "train.log"}}]},
        {"text": "The loss plateaued."},
    ]})
    first = create(server, messages=[SYSTEM, user("Why did training stall?")])
    assert first.id.startswith("chatcmpl-") and first.choices[0].finish_reason == "tool_calls"
    message = first.choices[0].message
    assert message.content == "Reading the log."
    (call,) = message.tool_calls
    assert call.id.startswith("call_") and json.loads(call.function.arguments) == {"path": "train.log"}
    history = [SYSTEM, user("Why did training stall?"), message.model_dump(exclude_none=True), tool(call.id)]
    second = create(server, messages=history)
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content == "The loss plateaued."
    assert server.requests("engineer", api="openai")[-1].last_user_text() == "loss 3.4"


def test_faults_are_the_sdk_exception_types(api_server):
    server = api_server({"engineer": [{"fault": 429, "retry_after": 2}, {"fault": 529}, {"fault": 500}]})
    ask = {"messages": [SYSTEM, user("Go.")]}
    with pytest.raises(openai.RateLimitError) as limited:
        create(server, **ask)
    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.code == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError) as overloaded:
        create(server, **ask)
    assert overloaded.value.status_code == 503  # OpenAI's overload
    with pytest.raises(openai.InternalServerError) as failed:
        create(server, **ask)
    assert failed.value.status_code == 500 and failed.value.type == "server_error"


def test_a_repeated_long_prefix_is_cached(api_server):
    server = api_server({"engineer": [{"text": "one"}, {"text": "two"}]})
    system = {**SYSTEM, "content": SYSTEM["content"] + " Details." * 1000}  # ~2.3k tokens
    first = create(server, messages=[system, user("Step one.")]).usage
    assert first.prompt_tokens > 2000 and first.prompt_tokens_details.cached_tokens == 0
    second = create(server, messages=[system, user("Step one."), {"role": "assistant", "content": "one"},
                                      user("Step two.")]).usage
    cached = second.prompt_tokens_details.cached_tokens
    assert 1024 <= cached <= first.prompt_tokens and (cached - 1024) % 128 == 0


def test_length_cuts_the_tool_arguments(api_server):
    server = api_server({"engineer": [{"tool_calls": [{"name": "write_file", "arguments": {
        "path": "train.py", "content": "import torch\n" * 40}}], "stop_reason": "max_tokens"}]})
    cut = create(server, max_completion_tokens=64, messages=[SYSTEM, user("Write it.")]).choices[0]
    assert cut.finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):  # OpenAI returns the raw, unfinished argument text
        json.loads(cut.message.tool_calls[0].function.arguments)
