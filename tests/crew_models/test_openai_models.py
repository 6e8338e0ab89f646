"""Our OpenAI client against recorded Chat Completions exchanges, and OpenAI-compatible servers."""

import asyncio

from crew.agent.autogen_adapter import AgentTool
from crew.agent.models import CallUsage, make_openai_client
from crew.agent.models.chat import ChatMessage, ToolCall, ToolResult, estimate_tokens
from crew.agent.models.openai_client import PLACEHOLDER_KEY, OpenAIClient

from .helpers import Recorder, Reply


async def read_file(path: str, max_lines: int = 100) -> str:
    """Read the first lines of a file in the workspace."""
    return ""


def test_tool_call_round_trip_and_cached_tokens():
    rec = Recorder([Reply(body="openai_tool_call.json"), Reply(body="openai_final_text.json")])
    client = make_openai_client("gpt-4.1", api_key="sk-test", http_client=rec.client())
    assert isinstance(client, OpenAIClient)
    tool = AgentTool(read_file).spec
    messages = [ChatMessage("system", "You are the engineer."), ChatMessage("user", "Why?")]

    first = asyncio.run(client.create(messages, tools=[tool]))
    assert first.finish_reason == "function_calls"
    assert first.calls == (ToolCall(id="call_abc123", name="read_file",
                                    arguments='{"path": "runs/train.log", "max_lines": 50}'),)
    sent = rec.bodies[0]
    assert sent["tools"][0]["function"]["name"] == "read_file"
    assert "temperature" not in sent
    assert rec.requests[0].headers["authorization"] == "Bearer sk-test"
    assert client.last_usage == CallUsage(input=1830, output=24)

    messages += [
        ChatMessage("assistant", calls=first.calls),
        ChatMessage("tool", results=(ToolResult(content="step 1200 loss 3.41", name="read_file",
                                                call_id="call_abc123"),)),
    ]
    second = asyncio.run(client.create(messages, tools=[tool]))
    assert second.finish_reason == "stop" and second.text.startswith("The loss")
    tool_msg = rec.bodies[1]["messages"][-1]
    assert tool_msg == {"role": "tool", "tool_call_id": "call_abc123", "content": "step 1200 loss 3.41"}
    assert rec.bodies[1]["messages"][-2]["tool_calls"][0]["id"] == "call_abc123"
    # Cached tokens are split out of prompt_tokens; OpenAI bills no cache writes.
    assert client.last_usage == CallUsage(input=1902 - 1792, output=14, cache_read=1792, cache_write=0)
    assert second.usage.prompt_tokens == 1902
    assert client.total_call_usage == CallUsage(1830 + 110, 38, 1792, 0)


def test_base_url_server_with_supplied_model_info(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rec = Recorder([Reply(body="openai_local_server.json")])
    client = make_openai_client("llama3.1:8b", base_url="http://localhost:11434/v1", http_client=rec.client())
    info = client.model_info
    assert info["function_calling"] and info["json_output"] and not info["vision"]
    assert info["family"] == "unknown" and not info["structured_output"]
    result = asyncio.run(client.create([ChatMessage("user", "ready?")]))
    assert result.text == "Ready."
    assert str(rec.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert rec.requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"
    assert rec.bodies[0]["model"] == "llama3.1:8b"
    assert client.last_usage == CallUsage(input=31, output=3)  # no prompt_tokens_details: nothing cached


def test_unknown_openai_model_and_offline_token_counts():
    client = make_openai_client("gpt-9-preview", api_key="k")
    assert client.model_info["function_calling"]
    messages = [ChatMessage("user", "x" * 400)]
    assert 90 < estimate_tokens(messages) < 120  # chars/4, no tiktoken download
    assert client.context_tokens - estimate_tokens(messages) > 100_000
