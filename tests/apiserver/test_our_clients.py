"""Our model clients, as the crew builds them (crew.agent.models.make_client, so RetryingClient around each), over
HTTP against the stand-in: a tool-call round trip, a 429 then success, and an unanswered tool call refused."""

from __future__ import annotations

import asyncio

import anthropic
import openai
import pytest

from crew.agent.autogen_adapter import AgentTool
from crew.agent.models import make_client
from crew.agent.models.chat import ChatMessage, ToolCall, ToolResult
from tests.crew_models.helpers import FakeTime

ENGINEER = "You are the engineer. You work in the workspace." + " Keep outputs short." * 600  # cacheable
SPECS = {"anthropic": lambda server: "anthropic:claude-sonnet-4-6",
         "openai": lambda server: f"openai:gpt-4.1-2025-04-14@{server.openai_base_url}"}
REFUSED = {"anthropic": anthropic.BadRequestError, "openai": openai.BadRequestError}


async def read_file(path: str) -> str:
    """Read a file in the workspace."""
    return ""


TOOLS = [AgentTool(read_file).spec]


def start(api_server, api: str, script: dict, **options):
    server = api_server(script, **options)
    time = FakeTime()
    client = make_client(SPECS[api](server), sleep=time.sleep, clock=time.clock)
    return server, client, time


async def ask(client, messages):
    return await client.create(messages, tools=TOOLS)


def opening() -> list:
    return [ChatMessage("system", ENGINEER), ChatMessage("user", "Why did training stall?")]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_tool_call_round_trip(api_server, api):
    server, client, _ = start(api_server, api, {"engineer": [
        {"thought": "Reading the log.", "tool_calls": [{"name": "read_file", "arguments": {"path": "train.log"}}]},
        {"text": "The loss plateaued at step 1200."},
    ]})
    written = []

    async def conversation():  # one event loop, as in a run: the client's connections belong to it
        messages = opening()
        first = await ask(client, messages)
        written.append(client.last_usage.cache_write)
        assert first.finish_reason == "function_calls"
        (call,) = first.calls
        assert call.name == "read_file" and call.arguments.replace(" ", "") == '{"path":"train.log"}'
        messages += [ChatMessage("assistant", first.text, first.calls),
                     ChatMessage("tool", results=(ToolResult(
                         content="step 1200 loss 3.41", name="read_file", call_id=call.id, is_error=False),))]
        return await ask(client, messages)

    second = asyncio.run(conversation())
    assert second.finish_reason == "stop" and second.text == "The loss plateaued at step 1200."
    assert server.requests("engineer")[-1].last_user_text() == "step 1200 loss 3.41"
    if api == "anthropic":  # our client marks tools, system and the last turn: the second call reads the first
        assert written[0] > 3000 and client.last_usage.cache_read == written[0]
    else:
        assert client.last_usage.cache_read >= 1024


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_rate_limit_then_success(api_server, api):
    server, client, time = start(api_server, api, {"engineer": [{"fault": 429, "retry_after": 1}, {"text": "done"}]})
    assert asyncio.run(ask(client, opening())).text == "done"
    assert time.sleeps == [1.0]  # the server's Retry-After, not a guess
    assert [e.status for e in server.exchanges] == [429, 200]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_unanswered_tool_call_is_refused(api_server, api):
    """What the crew sends after a turn cut off mid tool call (issue 11, defect 1): refused, not retried."""
    server, client, time = start(api_server, api, {"engineer": [{"text": "unreachable"}]}, expect_violations=True)
    call = ToolCall(id="toolu_01Cut" if api == "anthropic" else "call_Cut", name="read_file",
                    arguments='{"path": "train.log"}')
    messages = [*opening(), ChatMessage("assistant", calls=(call,)),
                ChatMessage("user", "WRAP-UP: submit the best evaluation now.")]
    with pytest.raises(REFUSED[api]):
        asyncio.run(ask(client, messages))
    assert time.sleeps == []  # a 400 is not retried
    (violation,) = server.violations
    assert call.id in violation.errors[0].message
    assert server.script.remaining() == {"engineer": 1}  # the model was never asked
