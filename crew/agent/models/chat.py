"""What our model clients speak: plain messages, tool specs, tool calls and answers, and the client interface.

Every client (Anthropic, OpenAI, `replay:`) and every wrapper (retries, text tools) takes and returns these
types; only crew/agent/autogen_adapter.py converts them to autogen's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from crew.agent.models.usage import CallUsage

Role = Literal["system", "user", "assistant", "tool"]
# Why an answer ended: "function_calls" (it holds calls), "length" (cut off at the output limit, calls too).
FinishReason = Literal["stop", "function_calls", "length", "content_filter", "unknown"]
# "auto", "required", "none", or the name of the one tool the model must call.
ToolChoice = str
TOOL_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # a JSON object as text, as the model wrote it (it may be malformed)


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ChatMessage:
    """A system or user text, an assistant turn (text and/or tool calls) or the results of its calls."""

    role: Role
    text: str = ""  # with calls: the thought written before them
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Answer:
    """One model answer: a text, or tool calls with the text written before them."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    finish_reason: FinishReason = "stop"
    usage: CallUsage = CallUsage()


class ModelClient(Protocol):
    """One model behind an API (or a script). `last_usage` is the latest call's tokens, `total_call_usage`
    the sum; `model_info` says what the model can do (vision, function_calling, json_output, family)."""

    model: str
    last_usage: CallUsage
    total_call_usage: CallUsage
    context_tokens: int

    @property
    def model_info(self) -> dict[str, Any]: ...

    async def create(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> Answer: ...

    async def close(self) -> None: ...


class WrappedClient:
    """A client around another (retries, text tools): close and every attribute it does not set itself (usage,
    model, model_info, ...) are the inner client's."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def forced_tool(choice: ToolChoice) -> str | None:
    """The tool the model must call, or None for "auto", "required" and "none"."""
    return None if choice in TOOL_CHOICES else choice


def estimate_tokens(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = ()) -> int:
    """A chars/4 estimate: good enough for budgeting and timeouts, no tokenizer download."""
    chars = sum(len(m.text) + sum(len(c.name) + len(c.arguments) for c in m.calls)
                + sum(len(r.content) for r in m.results) for m in messages)
    chars += sum(len(json.dumps(tool_schema(t))) for t in tools)
    return chars // 4 + 1


def tool_schema(tool: ToolSpec) -> dict[str, Any]:
    """The tool as a JSON schema record: {"name", "description", "parameters"}."""
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
