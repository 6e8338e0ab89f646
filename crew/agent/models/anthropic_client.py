"""Our autogen ChatCompletionClient on the current anthropic SDK.

autogen-ext's Anthropic client sends `temperature`, which the current SDK rejects; this one never does,
caches the stable prompt prefix, and reports cache reads and writes per call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Literal

import httpx2
from anthropic import AsyncAnthropic
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    FinishReasons,
    LLMMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from crew.agent.models.anthropic_convert import (
    Block,
    request_params,
    response_blocks,
)
from crew.agent.models.usage import CallUsage

log = logging.getLogger(__name__)

CONTEXT_TOKENS = 200_000
FINISH: dict[str | None, FinishReasons] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "function_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
# Tool-call turns remembered for echoing their thinking blocks; only the latest cycles ever need it.
ECHO_TURNS = 256
# A 5-minute cache write costs 1.25x the input price, a 1-hour one 2x, a read 0.1x: when calls come more than
# five minutes apart (long job waits), only the 1-hour cache is still there to read.
TTL_GAP_S = 300.0
RECENT_CALLS = 5


def _family(model: str) -> str:
    if "opus" in model:
        return ModelFamily.CLAUDE_4_OPUS
    if "haiku" in model:
        return ModelFamily.CLAUDE_3_5_HAIKU
    return ModelFamily.CLAUDE_4_SONNET


def estimate_tokens(messages: Sequence[LLMMessage], tools: Sequence[Tool | ToolSchema] = ()) -> int:
    """A chars/4 estimate: good enough for budgeting, no tokenizer download."""
    chars = sum(len(str(m.content)) + len(getattr(m, "thought", None) or "") for m in messages)
    chars += sum(len(json.dumps(t.schema if isinstance(t, Tool) else t)) for t in tools)
    return chars // 4 + 1


def usage_of(response: Any) -> CallUsage:
    u = response.usage
    return CallUsage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_read=getattr(u, "cache_read_input_tokens", None) or 0,
        cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_write_1h=getattr(getattr(u, "cache_creation", None), "ephemeral_1h_input_tokens", None) or 0,
    )


def result_of(response: Any, usage: CallUsage) -> CreateResult:
    texts = [b.text for b in response.content if b.type == "text"]
    calls = [
        FunctionCall(id=b.id, name=b.name, arguments=json.dumps(b.input))
        for b in response.content
        if b.type == "tool_use"
    ]
    text = "\n".join(t for t in texts if t)
    request_usage = RequestUsage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.output)
    if calls:
        # Cut off at max_tokens inside a tool call: the input is incomplete and must not be run.
        truncated = response.stop_reason in ("max_tokens", "model_context_window_exceeded")
        return CreateResult(finish_reason="length" if truncated else "function_calls", content=calls,
                            usage=request_usage, cached=False, thought=text or None)
    finish = FINISH.get(response.stop_reason, "unknown")
    return CreateResult(finish_reason=finish, content=text, usage=request_usage, cached=False)


class AnthropicChatCompletionClient(ChatCompletionClient):
    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        max_tokens: int = 8192,
        http_client: httpx2.AsyncClient | None = None,
        base_url: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model, self.max_tokens = model, max_tokens
        # max_retries=0: retries, backoff and giving up belong to RetryingClient.
        self._client = AsyncAnthropic(api_key=api_key, base_url=base_url, http_client=http_client, max_retries=0)
        self.last_usage = CallUsage()
        self.total_call_usage = CallUsage()
        self._last_request = RequestUsage(0, 0)
        self._total_request = RequestUsage(0, 0)
        self._turns: OrderedDict[str, list[Block]] = OrderedDict()
        self._call_times: deque[float] = deque(maxlen=RECENT_CALLS)
        self._clock = clock

    def cache_ttl(self) -> str:
        """The cheaper cache lifetime for the gaps between this client's recent calls."""
        times = list(self._call_times)
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        return "1h" if gaps and gaps[len(gaps) // 2] > TTL_GAP_S else "5m"

    def build_request(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Any = "auto",
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006 - read only, mirrors autogen's signature
    ) -> dict[str, Any]:
        """The keyword arguments of messages.create for these messages (public for tests and traces)."""
        return request_params(self.model, self.max_tokens, messages, tools, tool_choice, extra_create_args,
                              echo=self._turns.get, cache_ttl=self.cache_ttl())

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],  # noqa: B006 - the interface's signature
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        if json_output:
            raise ValueError("AnthropicChatCompletionClient does not support json_output or structured output")
        self._call_times.append(self._clock())
        params = self.build_request(messages, tools, tool_choice, extra_create_args)
        future = asyncio.ensure_future(self._client.messages.create(**params))
        if cancellation_token is not None:
            cancellation_token.link_future(future)
        response = await future
        usage = usage_of(response)
        self._record(usage)
        log.debug("anthropic %s: %s", self.model, usage)
        result = result_of(response, usage)
        if isinstance(result.content, list):
            self._remember(result.content[0].id, response_blocks(response.content))
        return result

    def _remember(self, call_id: str, blocks: list[Block]) -> None:
        if not any(b["type"] in ("thinking", "redacted_thinking") for b in blocks):
            return  # nothing that has to be echoed verbatim
        self._turns[call_id] = blocks
        while len(self._turns) > ECHO_TURNS:
            self._turns.popitem(last=False)

    def _record(self, usage: CallUsage) -> None:
        self.last_usage = usage
        self.total_call_usage = self.total_call_usage + usage
        self._last_request = RequestUsage(usage.prompt_tokens, usage.output)
        t = self._total_request
        self._total_request = RequestUsage(t.prompt_tokens + usage.prompt_tokens, t.completion_tokens + usage.output)

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
        """No token streaming: the crew saves state per call, so the final result is all it needs."""
        yield await self.create(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        )

    async def close(self) -> None:
        await self._client.close()

    def actual_usage(self) -> RequestUsage:
        return self._last_request

    def total_usage(self) -> RequestUsage:
        return self._total_request

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        return estimate_tokens(messages, tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        return max(0, CONTEXT_TOKENS - self.count_tokens(messages, tools=tools))

    @property
    def capabilities(self) -> Any:  # deprecated in autogen; model_info is what it reads
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=True,
            json_output=False,
            family=_family(self.model),
            structured_output=False,
            multiple_system_messages=True,
        )
