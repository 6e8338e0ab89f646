"""The stand-in Messages API through the official anthropic SDK: each rule refuses a bad request with the
real status and wording and accepts the corrected one; faults, usage and stop reasons as the SDK sees them."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from anthropic.types import Message

MODEL = "claude-sonnet-4-6"
ENGINEER = "You are the engineer. Work in the workspace."
TOOL = {"name": "read_file", "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
USE = {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "log"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "loss 3.4"}
THOUGHT = {"type": "thinking", "thinking": "The log will say.", "signature": "EqQBCgIYAhIM1gbcDa9G"}
CACHED = {"type": "ephemeral"}


def user(content):
    return {"role": "user", "content": content}


def assistant(content):
    return {"role": "assistant", "content": content}


def text(value, **extra):
    return {"type": "text", "text": value, **extra}


def client(server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)


def create(server, **request) -> Message:
    body = {"model": MODEL, "max_tokens": 256, "system": ENGINEER, "tools": [TOOL], **request}
    body = {k: v for k, v in body.items() if v is not None}
    # post() rather than messages.create(): the SDK would refuse a missing max_tokens before sending it.
    return client(server).post("/v1/messages", body=body, cast_to=Message)


ASKED = [user("Why did training stall?"), assistant([USE])]
# (rule, bad request, the real API's message, the corrected request)
RULES = [
    ("tool_use answered in the next message",
     {"messages": [*ASKED, user("What now?")]},
     "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each "
     "`tool_use` block must have a corresponding `tool_result` block in the next message.",
     {"messages": [*ASKED, user([RESULT, text("What now?")])]}),
    ("tool_result blocks first",
     {"messages": [*ASKED, user([text("Here:"), RESULT])]},
     "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following "
     "`tool_use` blocks must begin with a matching number of `tool_result` blocks.",
     {"messages": [*ASKED, user([RESULT, text("Here:")])]}),
    ("no orphan tool_result",
     {"messages": [user("Go."), assistant("Done."), user([RESULT])]},
     "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01A. Each `tool_result` "
     "block must have a corresponding `tool_use` block in the previous message.",
     {"messages": [user("Go."), assistant("Done."), user("Thanks.")]}),
    ("no empty text block",
     {"messages": [user([text("")])]}, "messages: text content blocks must be non-empty",
     {"messages": [user([text("Go.")])]}),
    ("no whitespace-only text block",
     {"messages": [user([text("  \n")])]}, "messages: text content blocks must contain non-whitespace text",
     {"messages": [user([text("Go.")])]}),
    ("no empty message",
     {"messages": [user([]), assistant("Hi."), user("Go.")]},
     "messages.0: all messages must have non-empty content except for the optional final assistant message",
     {"messages": [user("Hello."), assistant("Hi."), user("Go.")]}),
    ("no prefill on 4.6 models",
     {"messages": [user("Go."), assistant("Sure")]},
     "This model does not support assistant message prefill. The conversation must end with a user message.",
     {"messages": [user("Go."), assistant("Sure"), user("Continue.")]}),
    ("no trailing whitespace in a prefill",
     {"model": "claude-haiku-4-5", "messages": [user("Go."), assistant("Sure ")]},
     "messages: final assistant content cannot end with trailing whitespace",
     {"model": "claude-haiku-4-5", "messages": [user("Go."), assistant("Sure")]}),
    ("at most 4 cache breakpoints",
     {"system": [text(ENGINEER, cache_control=CACHED)], "tools": [{**TOOL, "cache_control": CACHED}],
      "messages": [user([text("a", cache_control=CACHED)]), assistant([text("b", cache_control=CACHED)]),
                   user([text("c", cache_control=CACHED)])]},
     "A maximum of 4 blocks with cache_control may be provided. Found 5.",
     {"system": [text(ENGINEER, cache_control=CACHED)], "tools": [{**TOOL, "cache_control": CACHED}],
      "messages": [user([text("a")]), assistant([text("b", cache_control=CACHED)]),
                   user([text("c", cache_control=CACHED)])]}),
    ("1h breakpoints before 5m ones",
     {"system": [text(ENGINEER, cache_control=CACHED)],
      "messages": [user([text("Go.", cache_control={"type": "ephemeral", "ttl": "1h"})])]},
     "messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
     "cache_control block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.",
     {"system": [text(ENGINEER, cache_control={"type": "ephemeral", "ttl": "1h"})],
      "messages": [user([text("Go.", cache_control=CACHED)])]}),
    ("max_tokens present",
     {"max_tokens": None, "messages": [user("Go.")]}, "max_tokens: Field required",
     {"max_tokens": 100, "messages": [user("Go.")]}),
    ("max_tokens positive",
     {"max_tokens": 0, "messages": [user("Go.")]}, "max_tokens: Input should be greater than or equal to 1",
     {"max_tokens": 1, "messages": [user("Go.")]}),
    ("temperature and top_p not both",
     {"temperature": 0.2, "top_p": 0.9, "messages": [user("Go.")]},
     "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
     {"temperature": 0.2, "messages": [user("Go.")]}),
    ("tool names match the pattern",
     {"tools": [{**TOOL, "name": "files.read"}], "messages": [user("Go.")]},
     "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
     {"tools": [{**TOOL, "name": "files_read"}], "messages": [user("Go.")]}),
    ("tool names at most 128 characters",
     {"tools": [{**TOOL, "name": "r" * 129}], "messages": [user("Go.")]},
     "tools.0.custom.name: String should have at most 128 characters",
     {"tools": [{**TOOL, "name": "r" * 128}], "messages": [user("Go.")]}),
    ("tool names unique",
     {"tools": [TOOL, TOOL], "messages": [user("Go.")]}, "tools: Tool names must be unique.",
     {"tools": [TOOL], "messages": [user("Go.")]}),
    ("input_schema an object schema",
     {"tools": [{**TOOL, "input_schema": {"type": "string"}}], "messages": [user("Go.")]},
     "tools.0.custom.input_schema.type: Input should be 'object'",
     {"tools": [TOOL], "messages": [user("Go.")]}),
    ("tool_choice needs tools",
     {"tools": None, "tool_choice": {"type": "any"}, "messages": [user("Go.")]},
     "tool_choice: tool_choice may only be specified while providing tools.",
     {"tool_choice": {"type": "any"}, "messages": [user("Go.")]}),
    ("a thinking block opens the assistant turn of a tool loop",
     {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048,
      "messages": [*ASKED, user([RESULT])]},
     "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is "
     "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
     "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
     "this requirement, disable `thinking`. Please consult our documentation at "
     "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
     {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048,
      "messages": [ASKED[0], assistant([THOUGHT, USE]), user([RESULT])]}),
    ("no thinking in a prefill without thinking enabled",
     {"model": "claude-haiku-4-5", "messages": [user("Go."), assistant([THOUGHT, text("Sure")])]},
     "messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot contain "
     "`thinking`. To use thinking blocks, enable `thinking` in your request.",
     {"model": "claude-haiku-4-5", "messages": [user("Go."), assistant([text("Sure")])]}),
    ("tool_use ids unique",
     {"messages": [*ASKED, user([RESULT]), assistant([USE])]},
     "messages.3.content.0: `tool_use` ids must be unique",
     {"messages": [*ASKED, user([RESULT]), assistant([{**USE, "id": "toolu_01B"}]),
                   user([{**RESULT, "tool_use_id": "toolu_01B"}])]}),
]


@pytest.mark.parametrize(("rule", "bad", "message", "good"), RULES, ids=[r[0] for r in RULES])
def test_rule_refuses_then_accepts(api_server, rule, bad, message, good):
    server = api_server({"engineer": [{"text": "fine"}]}, expect_violations=True)
    with pytest.raises(anthropic.BadRequestError) as refused:
        create(server, **bad)
    assert refused.value.status_code == 400
    assert refused.value.body["error"] == {"type": "invalid_request_error", "message": message}
    assert refused.value.response.headers["request-id"].startswith("req_")
    assert [e.errors[0].message for e in server.violations] == [message]

    answer = create(server, **good)
    assert answer.content[0].text == "fine"
    assert len(server.violations) == 1


def test_tool_round_trip_ids_stop_reasons_and_thinking(api_server):
    server = api_server({"engineer": [
        {"thinking": "The log will say.", "thought": "Reading the log.",
         "tool_calls": [{"name": "read_file", "arguments": {"path": "train.log"}}]},
        {"text": "The loss plateaued."},
    ]})
    first = create(server, messages=[user("Why did training stall?")])
    assert first.id.startswith("msg_01") and first.stop_reason == "tool_use"
    thinking, said, call = first.content
    assert thinking.type == "thinking" and thinking.thinking == "The log will say." and thinking.signature
    assert said.text == "Reading the log."
    assert call.id.startswith("toolu_01") and call.name == "read_file" and call.input == {"path": "train.log"}

    reply = [user("Why did training stall?"), assistant([b.model_dump(exclude_none=True) for b in first.content]),
             user([{"type": "tool_result", "tool_use_id": call.id, "content": "step 1200 loss 3.41"}])]
    second = create(server, messages=reply)
    assert second.stop_reason == "end_turn" and second.content[0].text == "The loss plateaued."
    assert [e.role for e in server.exchanges] == ["engineer", "engineer"]
    assert server.requests("engineer")[-1].last_user_text() == "step 1200 loss 3.41"


def test_faults_are_the_sdk_exception_types(api_server):
    server = api_server({"engineer": [{"fault": 429, "retry_after": 1}, {"fault": 529}, {"fault": 500},
                                      {"error": "connection"}, {"text": "back"}]})
    ask = {"messages": [user("Go.")]}
    with pytest.raises(anthropic.RateLimitError) as limited:
        create(server, **ask)
    assert limited.value.response.headers["retry-after"] == "1"
    assert limited.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        create(server, **ask)
    assert isinstance(overloaded.value, anthropic.InternalServerError)
    assert overloaded.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    with pytest.raises(anthropic.InternalServerError) as failed:
        create(server, **ask)
    assert failed.value.status_code == 500 and failed.value.body["error"]["type"] == "api_error"
    with pytest.raises(anthropic.APIConnectionError):
        create(server, **ask)
    assert create(server, **ask).content[0].text == "back"


def test_cache_reads_what_the_previous_call_wrote(api_server):
    clock = [0.0]
    server = api_server({"engineer": [{"text": str(i)} for i in range(5)]},
                        clock=lambda: clock[0])
    system = [text(ENGINEER + " Details." * 1000, cache_control=CACHED)]  # ~2.5k tokens, above the minimum
    first_turn = [user([text("Step one.", cache_control=CACHED)])]
    first = create(server, system=system, messages=first_turn).usage
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens > 2000
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens

    later = [user([text("Step one.")]), assistant("one"), user([text("Step two.", cache_control=CACHED)])]
    second = create(server, system=system, messages=later).usage
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens  # the whole earlier prefix
    assert 0 < second.cache_creation_input_tokens < 50  # only the new turns are written

    clock[0] += 301  # past the 5-minute TTL: written again
    third = create(server, system=system, messages=later).usage
    assert third.cache_read_input_tokens == 0 and third.cache_creation_input_tokens > 2000

    hour = [text(ENGINEER + " Details." * 1000, cache_control={"type": "ephemeral", "ttl": "1h"})]
    create(server, system=hour, messages=[user("Step one.")])
    clock[0] += 1800  # half an hour: the 1-hour entry is still there
    assert create(server, system=hour, messages=[user("Step one.")]).usage.cache_read_input_tokens > 2000


def test_short_prefixes_are_not_cached(api_server):
    server = api_server({"engineer": [{"text": "one"}, {"text": "two"}]})
    system = [text(ENGINEER, cache_control=CACHED)]
    for _ in range(2):
        usage = create(server, system=system, messages=[user("Go.")]).usage
        assert usage.cache_read_input_tokens == usage.cache_creation_input_tokens == 0
        assert usage.input_tokens > 0


def test_max_tokens_cuts_a_tool_call_mid_input(api_server):
    content = "import torch\n" * 40
    server = api_server({"engineer": [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "train.py", "content": content}}],
         "stop_reason": "max_tokens"},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "train.py", "content": content}}]},
    ]})
    cut = create(server, max_tokens=300, messages=[user("Write it.")])
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 300
    call = cut.content[-1]
    assert call.type == "tool_use" and call.input["path"] == "train.py"
    assert call.input["content"] == content[: len(content) // 2]  # half written, still valid JSON

    # An answer longer than max_tokens is cut the same way without being told.
    long = create(server, max_tokens=50, messages=[user("Write it.")])
    assert long.stop_reason == "max_tokens" and long.usage.output_tokens == 50
    assert len(long.content[-1].input["content"]) < len(content)


def test_refusal(api_server):
    server = api_server({"engineer": [{"refusal": "I can't help with that.", "refusal_category": "cyber"}]})
    answer = create(server, messages=[user("Go.")])
    assert answer.stop_reason == "refusal" and answer.content[0].text == "I can't help with that."
    assert answer.stop_details.category == "cyber"


def test_script_problems_are_obvious(api_server):
    server = api_server({"engineer": [{"text": "only one"}]}, allow_script_problems=True)
    create(server, messages=[user("Go.")])
    with pytest.raises(anthropic.BadRequestError, match=r"apiserver: the script has no answer #2 for role 'engineer'"):
        create(server, messages=[user("Go.")])
    with pytest.raises(anthropic.BadRequestError, match="apiserver: no role matches the system prompt"):
        create(server, system="You are a poet.", messages=[user("Go.")])
    assert len(server.script_problems) == 2 and not server.violations


def test_missing_api_key_is_refused(api_server):
    server = api_server({"engineer": []}, expect_violations=True)
    # Plain HTTP: the SDK itself refuses to send a request without a key.
    answer = httpx.post(f"{server.url}/v1/messages", json={"model": MODEL, "max_tokens": 10,
                                                          "messages": [user("Go.")]})
    assert answer.status_code == 401
    assert answer.json()["error"] == {"type": "authentication_error", "message": "x-api-key header is required"}


def test_the_anthropic_version_header_is_required(api_server):
    server = api_server({"engineer": []}, expect_violations=True)
    answer = httpx.post(f"{server.url}/v1/messages", headers={"x-api-key": "test-key"},
                        json={"model": MODEL, "max_tokens": 10, "messages": [user("Go.")]})
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == "anthropic-version: header is required"
