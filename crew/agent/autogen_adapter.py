"""The one module that imports autogen: it converts between autogen's types and our plain ones
(crew/agent/models/chat.py).

- `AgentTool`: an agent's tool made from a typed method by autogen's FunctionTool: its spec (the JSON schema of
  the signature, the docstring as the description) and its run, with the arguments checked against the signature.
- `AutogenModelClient`: any of our model clients as autogen's ChatCompletionClient, so that autogen-agentchat's
  AssistantAgent (or anything else written for autogen) can drive it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Literal

from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool, Tool, ToolSchema
from pydantic import BaseModel

from crew.agent.models.chat import Answer, ChatMessage, ModelClient, ToolCall, ToolResult, ToolSpec, estimate_tokens


class AgentTool:
    """A typed method as a tool. The schema is built once: autogen rebuilds it with pydantic on every access,
    which was most of a step's own cost."""

    def __init__(self, method: Callable[..., Any]) -> None:
        description = " ".join((method.__doc__ or method.__name__).split())
        self._tool = FunctionTool(method, description=description, name=method.__name__)
        self.schema: dict[str, Any] = dict(self._tool.schema)
        self.name: str = self.schema["name"]
        self.spec = spec_of(self.schema)

    async def run(self, arguments: Mapping[str, Any], call_id: str) -> str:
        """Run with JSON arguments (checked against the signature); the return value as text. What the method
        raises (a bad argument, a Decision) propagates."""
        value = await self._tool.run_json(arguments, CancellationToken(), call_id=call_id)
        return self._tool.return_value_as_string(value)


def spec_of(tool: Tool | ToolSchema | Mapping[str, Any]) -> ToolSpec:
    schema = tool.schema if isinstance(tool, Tool) else tool
    parameters = dict(schema.get("parameters") or {"type": "object", "properties": {}})
    return ToolSpec(schema["name"], schema.get("description", ""), parameters)


def chat_message(message: LLMMessage) -> ChatMessage:
    if isinstance(message, SystemMessage):
        return ChatMessage("system", message.content)
    if isinstance(message, UserMessage):
        if not isinstance(message.content, str) and not all(isinstance(p, str) for p in message.content):
            raise ValueError("our model clients take text only; images are not supported")
        return ChatMessage("user", message.content if isinstance(message.content, str) else "\n".join(message.content))
    if isinstance(message, AssistantMessage) and isinstance(message.content, str):
        return ChatMessage("assistant", message.content)
    if isinstance(message, AssistantMessage):
        calls = tuple(ToolCall(c.id, c.name, c.arguments) for c in message.content)
        return ChatMessage("assistant", message.thought or "", calls)
    if isinstance(message, FunctionExecutionResultMessage):
        return ChatMessage("tool", results=tuple(ToolResult(r.call_id, r.name, r.content, bool(r.is_error))
                                                 for r in message.content))
    raise TypeError(f"unsupported message type {type(message).__name__}")


def create_result(answer: Answer) -> CreateResult:
    usage = RequestUsage(prompt_tokens=answer.usage.prompt_tokens, completion_tokens=answer.usage.output)
    if answer.calls:
        calls = [FunctionCall(id=c.id, name=c.name, arguments=c.arguments) for c in answer.calls]
        return CreateResult(finish_reason=answer.finish_reason, content=calls, usage=usage, cached=False,
                            thought=answer.text or None)
    return CreateResult(finish_reason=answer.finish_reason, content=answer.text, usage=usage, cached=False)


class AutogenModelClient(ChatCompletionClient):
    """One of our model clients behind autogen's interface. No token streaming: create_stream yields the whole
    answer."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],  # noqa: B006 - autogen's signature
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        extra = dict(extra_create_args)
        if json_output is True and self.client.model_info.get("json_output"):
            extra["response_format"] = {"type": "json_object"}
        elif json_output:
            raise ValueError(f"{type(self.client).__name__} does not support this json_output or structured output")
        choice = tool_choice.name if isinstance(tool_choice, Tool) else tool_choice
        future = asyncio.ensure_future(self.client.create([chat_message(m) for m in messages],
                                                          tools=[spec_of(t) for t in tools], tool_choice=choice,
                                                          extra=extra))
        if cancellation_token is not None:
            cancellation_token.link_future(future)
        return create_result(await future)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],  # noqa: B006
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
                                extra_create_args=extra_create_args, cancellation_token=cancellation_token)

    async def close(self) -> None:
        await self.client.close()

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(self.client.last_usage.prompt_tokens, self.client.last_usage.output)

    def total_usage(self) -> RequestUsage:
        return RequestUsage(self.client.total_call_usage.prompt_tokens, self.client.total_call_usage.output)

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        return estimate_tokens([chat_message(m) for m in messages], [spec_of(t) for t in tools])

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        return max(0, self.client.context_tokens - self.count_tokens(messages, tools=tools))

    @property
    def capabilities(self) -> Any:  # deprecated in autogen; model_info is what it reads
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(**self.client.model_info)  # type: ignore[typeddict-item]
