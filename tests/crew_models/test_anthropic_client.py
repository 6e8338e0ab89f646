"""The Anthropic client against recorded Messages API exchanges: tools, caching, usage, message shape."""

import asyncio

from autogen_core.models import SystemMessage, UserMessage

from crew.agent.autogen_adapter import AgentTool, AutogenModelClient
from crew.agent.models import AnthropicClient, CallUsage, cost_usd
from crew.agent.models.chat import ChatMessage, ToolCall, ToolResult, ToolSpec, estimate_tokens

from .helpers import Recorder, Reply

MODEL = "claude-sonnet-4-6"


async def read_file(path: str, max_lines: int = 100) -> str:
    """Read the first lines of a file in the workspace."""
    return ""


def make(recorder: Recorder) -> AnthropicClient:
    return AnthropicClient(MODEL, api_key="test-key", http_client=recorder.client())


def conversation() -> list:
    return [ChatMessage("system", "You are the engineer."), ChatMessage("user", "Why did training stall?")]


def test_tool_use_round_trip():
    rec = Recorder([Reply(body="anthropic_tool_use.json"), Reply(body="anthropic_final_text.json")])
    client = make(rec)
    tool = AgentTool(read_file).spec
    messages = conversation()

    first = asyncio.run(client.create(messages, tools=[tool]))
    assert first.finish_reason == "function_calls"
    assert first.calls == (
        ToolCall(id="toolu_01A09q90qw90lq917835lq9", name="read_file",
                 arguments='{"path": "runs/train.log", "max_lines": 50}'),
    )
    assert first.text == "I'll look at the training log first."
    sent = rec.bodies[0]
    assert sent["model"] == MODEL and sent["max_tokens"] == 8192
    assert sent["tools"][0]["name"] == "read_file"
    assert sent["tools"][0]["description"].startswith("Read the first lines")
    assert sent["tools"][0]["input_schema"]["properties"]["path"]["type"] == "string"
    assert sent["tool_choice"] == {"type": "auto"}
    assert sent["system"][0]["text"] == "You are the engineer."
    headers = rec.requests[0].headers
    assert "test-key" in headers.get("x-api-key", "") + headers.get("authorization", "")

    messages += [
        ChatMessage("assistant", first.text, first.calls),
        ChatMessage("tool", results=(ToolResult(content="step 1200 loss 3.41", name="read_file",
                                                call_id="toolu_01A09q90qw90lq917835lq9", is_error=False),)),
    ]
    second = asyncio.run(client.create(messages, tools=[tool]))
    assert second.finish_reason == "stop"
    assert second.text.startswith("The loss plateaued")
    assistant, result = rec.bodies[1]["messages"][1:]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "text", "text": "I'll look at the training log first."}
    assert assistant["content"][1] == {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                                       "name": "read_file", "input": {"path": "runs/train.log", "max_lines": 50}}
    assert result["role"] == "user"
    assert result["content"][0]["type"] == "tool_result"
    assert result["content"][0]["tool_use_id"] == "toolu_01A09q90qw90lq917835lq9"
    assert result["content"][0]["content"] == "step 1200 loss 3.41"


def test_cache_breakpoints_on_stable_prefix_and_latest_turn():
    rec = Recorder([Reply(body="anthropic_final_text.json")])
    tools = [ToolSpec("a", "A.", {"type": "object", "properties": {}}),
             ToolSpec("b", "B.", {"type": "object", "properties": {}})]
    messages = conversation() + [ChatMessage("assistant", "Looking."), ChatMessage("user", "Go on.")]
    asyncio.run(make(rec).create(messages, tools=tools))
    body = rec.bodies[0]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    marks = sum("cache_control" in block for m in body["messages"] for block in m["content"])
    assert marks == 1  # three breakpoints in all, within the API's four


def test_cache_usage_parsed_and_costed():
    rec = Recorder([Reply(body="anthropic_tool_use.json"), Reply(body="anthropic_final_text.json")])
    client = make(rec)
    first = asyncio.run(client.create(conversation()))
    assert client.last_usage == CallUsage(input=57, output=61, cache_read=0, cache_write=2048)
    assert first.usage.prompt_tokens == 57 + 2048 and first.usage.output == 61
    asyncio.run(client.create(conversation()))
    assert client.last_usage == CallUsage(input=143, output=27, cache_read=2048, cache_write=118)
    assert client.total_call_usage == CallUsage(200, 88, 2048, 2166)
    assert client.total_call_usage.prompt_tokens == 57 + 2048 + 143 + 2048 + 118
    assert client.last_usage.output == 27
    expected = (143 * 3 + 27 * 15 + 2048 * 0.3 + 118 * 3.75) / 1e6
    assert abs(cost_usd(MODEL, client.last_usage) - expected) < 1e-12


def test_temperature_never_sent():
    rec = Recorder([Reply(body="anthropic_final_text.json")])
    asyncio.run(make(rec).create(conversation(), extra={"temperature": 0.2, "stop_sequences": ["END"]}))
    body = rec.bodies[0]
    assert "temperature" not in body
    assert body["stop_sequences"] == ["END"]
    assert "tools" not in body and "tool_choice" not in body


def test_consecutive_roles_merged_and_results_first():
    rec = Recorder([Reply(body="anthropic_final_text.json")])
    call = ToolCall(id="t1", name="read_file", arguments='{"path": "a"}')
    messages = [
        ChatMessage("system", "S1"),
        ChatMessage("system", "S2"),
        ChatMessage("user", "task"),
        ChatMessage("user", "memory hits"),
        ChatMessage("assistant", "thinking"),
        ChatMessage("assistant", calls=(call,)),
        ChatMessage("tool", results=(ToolResult(content="boom", name="read_file", call_id="t1", is_error=True),)),
        ChatMessage("user", "budget: 3h left"),
        ChatMessage("system", "wrap up soon"),
    ]
    asyncio.run(make(rec).create(messages))
    body = rec.bodies[0]
    assert [b["text"] for b in body["system"]] == ["S1", "S2"]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert [b["text"] for b in body["messages"][0]["content"]] == ["task", "memory hits"]
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]
    last = body["messages"][2]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text", "text"]
    assert last[0]["is_error"] is True
    assert last[2]["text"] == "[system] wrap up soon"


def test_malformed_arguments_and_empty_text_still_valid():
    rec = Recorder([Reply(body="anthropic_max_tokens.json")])
    call = ToolCall(id="t1", name="read_file", arguments="{not json")
    messages = [
        ChatMessage("user", ""),
        ChatMessage("assistant", calls=(call,)),
        ChatMessage("tool", results=(ToolResult(content="", name="read_file", call_id="t1"),)),
    ]
    result = asyncio.run(make(rec).create(messages))
    assert result.finish_reason == "length"
    body = rec.bodies[0]
    assert body["messages"][0]["content"][0]["text"]
    assert body["messages"][1]["content"][0]["input"] == {"arguments": "{not json"}
    assert body["messages"][2]["content"][0]["content"]


def test_interface_helpers():
    client = AnthropicClient(MODEL, api_key="k")
    info = client.model_info
    assert info["function_calling"] and not info["vision"] and not info["json_output"]
    assert info["family"].startswith("claude")
    n = estimate_tokens(conversation())
    assert 0 < n < 50 and client.context_tokens == 200_000

    rec = Recorder([Reply(body="anthropic_final_text.json")])

    async def stream():  # through autogen's interface (crew/agent/autogen_adapter.py): one chunk, the answer
        messages = [SystemMessage(content="You are the engineer."),
                    UserMessage(content="Why did training stall?", source="supervisor")]
        return [chunk async for chunk in AutogenModelClient(make(rec)).create_stream(messages)]

    chunks = asyncio.run(stream())
    assert len(chunks) == 1 and chunks[0].finish_reason == "stop"
    asyncio.run(client.close())


def test_thinking_blocks_echoed_with_tool_results():
    rec = Recorder([Reply(body="anthropic_thinking_tool_use.json"), Reply(body="anthropic_final_text.json")])
    client = make(rec)
    messages = conversation()
    first = asyncio.run(client.create(messages, tools=[AgentTool(read_file).spec]))
    assert first.finish_reason == "function_calls" and first.text == "Checking the log."
    messages += [
        ChatMessage("assistant", first.text, first.calls),
        ChatMessage("tool", results=(ToolResult(content="ok", name="read_file", call_id=first.calls[0].id),)),
    ]
    asyncio.run(client.create(messages))
    echoed = rec.bodies[1]["messages"][1]["content"]
    assert [b["type"] for b in echoed] == ["thinking", "text", "tool_use"]
    assert echoed[0]["signature"] == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert echoed[2]["input"] == {"path": "runs/train.log"}
