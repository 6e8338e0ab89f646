"""Our Anthropic client on the current anthropic SDK.

autogen-ext's Anthropic client sends `temperature`, which the current SDK rejects; this one never does,
caches the stable prompt prefix, and reports cache reads and writes per call.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx2
from anthropic import AsyncAnthropic

from crew.agent.models.anthropic_convert import Block, request_params, response_blocks
from crew.agent.models.chat import Answer, ChatMessage, FinishReason, ToolCall, ToolChoice, ToolSpec
from crew.agent.models.usage import CallUsage

log = logging.getLogger(__name__)

CONTEXT_TOKENS = 200_000
FINISH: dict[str | None, FinishReason] = {
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
    """autogen's model family names, for model_info."""
    if "opus" in model:
        return "claude-4-opus"
    if "haiku" in model:
        return "claude-3-5-haiku"
    return "claude-4-sonnet"


def usage_of(response: Any) -> CallUsage:
    u = response.usage
    return CallUsage(
        input=u.input_tokens or 0,
        output=u.output_tokens or 0,
        cache_read=getattr(u, "cache_read_input_tokens", None) or 0,
        cache_write=getattr(u, "cache_creation_input_tokens", None) or 0,
        cache_write_1h=getattr(getattr(u, "cache_creation", None), "ephemeral_1h_input_tokens", None) or 0,
    )


def answer_of(response: Any, usage: CallUsage) -> Answer:
    text = "\n".join(b.text for b in response.content if b.type == "text" and b.text)
    calls = tuple(ToolCall(id=b.id, name=b.name, arguments=json.dumps(b.input))
                  for b in response.content if b.type == "tool_use")
    if calls:
        # Cut off at max_tokens inside a tool call: the input is incomplete and must not be run.
        truncated = response.stop_reason in ("max_tokens", "model_context_window_exceeded")
        return Answer(text, calls, "length" if truncated else "function_calls", usage)
    return Answer(text, (), FINISH.get(response.stop_reason, "unknown"), usage)


class AnthropicClient:
    context_tokens = CONTEXT_TOKENS

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
        self.output_limit_param = "max_tokens"
        # max_retries=0: retries, backoff and giving up belong to RetryingClient.
        self._client = AsyncAnthropic(api_key=api_key, base_url=base_url, http_client=http_client, max_retries=0)
        self.last_usage = CallUsage()
        self.total_call_usage = CallUsage()
        self._turns: OrderedDict[str, list[Block]] = OrderedDict()
        self._call_times: deque[float] = deque(maxlen=RECENT_CALLS)
        self._clock = clock

    def cache_ttl(self) -> str:
        """The cheaper cache lifetime for the gaps between this client's recent calls."""
        times = list(self._call_times)
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        return "1h" if gaps and gaps[len(gaps) // 2] > TTL_GAP_S else "5m"

    def build_request(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                      tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of messages.create for these messages (public for tests and traces)."""
        return request_params(self.model, self.max_tokens, messages, tools, tool_choice, extra,
                              echo=self._turns.get, cache_ttl=self.cache_ttl())

    async def create(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> Answer:
        self._call_times.append(self._clock())
        response = await self._client.messages.create(**self.build_request(messages, tools, tool_choice, extra))
        usage = usage_of(response)
        self.last_usage = usage
        self.total_call_usage = self.total_call_usage + usage
        log.debug("anthropic %s: %s", self.model, usage)
        answer = answer_of(response, usage)
        if answer.calls:
            self._remember(answer.calls[0].id, response_blocks(response.content))
        return answer

    def _remember(self, call_id: str, blocks: list[Block]) -> None:
        if not any(b["type"] in ("thinking", "redacted_thinking") for b in blocks):
            return  # nothing that has to be echoed verbatim
        self._turns[call_id] = blocks
        while len(self._turns) > ECHO_TURNS:
            self._turns.popitem(last=False)

    async def close(self) -> None:
        await self._client.close()

    @property
    def model_info(self) -> dict[str, Any]:
        return {"vision": False, "function_calling": True, "json_output": False, "family": _family(self.model),
                "structured_output": False, "multiple_system_messages": True}
