"""Opt-in live calls (pytest --run-network) with real keys: one tool-use round per provider."""

import asyncio
import os

import pytest

from crew.agent.autogen_adapter import AgentTool
from crew.agent.models import make_client
from crew.agent.models.chat import ChatMessage


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _round(spec: str) -> None:
    client = make_client(spec, max_attempts=3)
    messages = [ChatMessage("user", "Use the add tool to add 2 and 3.")]
    result = asyncio.run(client.create(messages, tools=[AgentTool(add).spec]))
    assert result.finish_reason == "function_calls" and result.calls[0].name == "add"
    assert client.last_usage.output > 0
    asyncio.run(client.close())


@pytest.mark.network
@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY")
def test_anthropic_live():
    _round(f"anthropic:{os.environ.get('RESEARCH_CREW_LIVE_ANTHROPIC_MODEL', 'claude-sonnet-4-6')}")


@pytest.mark.network
@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
def test_openai_live():
    _round(f"openai:{os.environ.get('RESEARCH_CREW_LIVE_OPENAI_MODEL', 'gpt-4.1-mini')}")
