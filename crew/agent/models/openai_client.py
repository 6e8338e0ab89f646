"""Our OpenAI Chat Completions client on the current openai SDK: OpenAI, and OpenAI-compatible servers (vLLM,
Ollama, llama.cpp) at a base URL.

Usage splits the cached tokens out of prompt_tokens (usage.prompt_tokens_details.cached_tokens); OpenAI bills no
cache writes, so cache_write is always 0.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx2
from openai import AsyncOpenAI

from crew.agent.models.chat import (
    Answer,
    ChatMessage,
    FinishReason,
    ToolCall,
    ToolChoice,
    ToolSpec,
    estimate_tokens,
    forced_tool,
)
from crew.agent.models.usage import CallUsage

log = logging.getLogger(__name__)

# Servers that speak the OpenAI API need no key; the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"
DEFAULT_CONTEXT_TOKENS = 128_000
# Every request carries an output limit, so an endless answer (a small model's runaway newlines) ends. OpenAI's
# own API takes max_completion_tokens (its newer models refuse max_tokens); OpenAI-compatible servers (vLLM,
# llama.cpp, Ollama) all take max_tokens.
OPENAI_MAX_OUTPUT_TOKENS = 8_192
LOCAL_MAX_OUTPUT_TOKENS = 4_096
# A request to a server of one's own that neither answers nor closes within this is abandoned (and retried as a
# transient failure): a base for the connection and the first token, plus reading the prompt and writing the
# longest answer at a slow CPU server's pace. OpenAI's own API keeps the SDK's timeout (600 s).
BASE_TIMEOUT_S = 120.0
PREFILL_TOKENS_PER_S = 25.0
DECODE_TOKENS_PER_S = 10.0
FINISH: dict[str | None, FinishReason] = {"stop": "stop", "length": "length", "tool_calls": "function_calls",
                                          "function_call": "function_calls", "content_filter": "content_filter"}


def usage_from_completion(completion: Any) -> CallUsage:
    u = getattr(completion, "usage", None)
    if u is None:
        return CallUsage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    prompt = u.prompt_tokens or 0
    return CallUsage(input=max(0, prompt - cached), output=u.completion_tokens or 0, cache_read=cached)


def request_timeout_s(prompt_tokens: int, max_output_tokens: int) -> float:
    """How long a request may take before it is abandoned, scaled to its prompt and its output limit."""
    return BASE_TIMEOUT_S + prompt_tokens / PREFILL_TOKENS_PER_S + max_output_tokens / DECODE_TOKENS_PER_S


def chat_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages as Chat Completions messages; a turn's tool results become one `tool` message each."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out += [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in m.results]
        elif m.role == "assistant" and m.calls:
            calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                     for c in m.calls]
            out.append({"role": "assistant", "tool_calls": calls, **({"content": m.text} if m.text else {})})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def tool_params(tools: Sequence[ToolSpec], choice: ToolChoice) -> dict[str, Any]:
    if not tools:
        return {}
    functions = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                   "parameters": t.parameters, "strict": False}} for t in tools]
    name = forced_tool(choice)
    return {"tools": functions, "tool_choice": {"type": "function", "function": {"name": name}} if name else choice}


def answer_of(completion: Any, usage: CallUsage) -> Answer:
    choice = completion.choices[0]
    message = choice.message
    text = message.content or ""
    if message.tool_calls:
        calls = tuple(ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
                      for c in message.tool_calls)
        # Tool calls cut off at the output limit are incomplete: they must not be run (crew/agent/session.py).
        return Answer(text, calls, "length" if choice.finish_reason == "length" else "function_calls", usage)
    return Answer(text, (), FINISH.get(choice.finish_reason, "unknown"), usage)


class OpenAIClient:
    """Chat Completions with an output limit on every request, and for a server of one's own a timeout scaled to
    the request."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 http_client: httpx2.AsyncClient | None = None) -> None:
        self.model, self.local = model, bool(base_url)
        self.output_limit_param = "max_tokens" if self.local else "max_completion_tokens"
        self.max_tokens = LOCAL_MAX_OUTPUT_TOKENS if self.local else OPENAI_MAX_OUTPUT_TOKENS
        self.context_tokens = DEFAULT_CONTEXT_TOKENS
        self.last_usage = CallUsage()
        self.total_call_usage = CallUsage()
        # max_retries=0: retries belong to RetryingClient.
        self._client = AsyncOpenAI(api_key=api_key, base_url=base_url, http_client=http_client, max_retries=0)

    def build_request(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                      tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of chat.completions.create (the body, and for a local server its timeout)."""
        params: dict[str, Any] = {"model": self.model, "messages": chat_messages(messages),
                                  **tool_params(tools, tool_choice), **(extra or {})}
        if not {"max_tokens", "max_completion_tokens"} & set(params):
            params[self.output_limit_param] = self.max_tokens
        if self.local:
            limit = params.get("max_tokens") or params.get("max_completion_tokens")
            params.setdefault("timeout", request_timeout_s(estimate_tokens(messages, tools), limit))
        return params

    async def create(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> Answer:
        completion = await self._client.chat.completions.create(**self.build_request(messages, tools, tool_choice,
                                                                                     extra))
        usage = usage_from_completion(completion)
        self.last_usage = usage
        self.total_call_usage = self.total_call_usage + usage
        return answer_of(completion, usage)

    async def close(self) -> None:
        await self._client.close()

    @property
    def model_info(self) -> dict[str, Any]:
        return {"vision": False, "function_calling": True, "json_output": True, "family": "unknown",
                "structured_output": False}


def make_openai_client(model: str, base_url: str | None = None, api_key: str | None = None,
                       http_client: httpx2.AsyncClient | None = None) -> OpenAIClient:
    """A client for OpenAI, or for any OpenAI-compatible server at base_url (which needs no key)."""
    if base_url:
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
    return OpenAIClient(model, base_url=base_url, api_key=api_key, http_client=http_client)
