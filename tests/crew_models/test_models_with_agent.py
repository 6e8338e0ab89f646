"""autogen-agentchat's AssistantAgent drives our Anthropic client (retrying), through the one autogen adapter,
through a tool call end to end."""

import asyncio
import random

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core.tools import FunctionTool

from crew.agent.autogen_adapter import AutogenModelClient
from crew.agent.models import AnthropicClient, RetryingClient

from .helpers import FakeTime, Recorder, Reply

calls: list[str] = []


async def read_file(path: str, max_lines: int = 100) -> str:
    """Read the first lines of a file in the workspace."""
    calls.append(path)
    return "step 1200 loss 3.41"


def test_assistant_agent_tool_round_trip():
    rec = Recorder([Reply(529, "anthropic_overloaded.json"), Reply(body="anthropic_tool_use.json"),
                    Reply(body="anthropic_final_text.json")])
    fake = FakeTime()
    inner = AnthropicClient("claude-sonnet-4-6", api_key="k", http_client=rec.client())
    client = AutogenModelClient(RetryingClient(inner, sleep=fake.sleep, clock=fake.clock, rng=random.Random(1)))
    agent = AssistantAgent("engineer", model_client=client, system_message="You are the engineer.",
                           tools=[FunctionTool(read_file, description="Read a file.")], reflect_on_tool_use=True)
    result = asyncio.run(agent.run(task="Why did training stall?"))
    kinds = [type(m) for m in result.messages]
    assert ToolCallRequestEvent in kinds and ToolCallExecutionEvent in kinds
    assert calls == ["runs/train.log"]
    assert result.messages[-1].content.startswith("The loss plateaued")
    assert len(rec.bodies) == 3 and len(fake.sleeps) == 1
    final = rec.bodies[2]
    assert final["system"][0]["text"] == "You are the engineer."
    assert [m["role"] for m in final["messages"]] == ["user", "assistant", "user"]
    assert final["messages"][2]["content"][0]["type"] == "tool_result"
    assert "temperature" not in final
