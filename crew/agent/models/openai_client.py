"""OpenAI and OpenAI-compatible servers (vLLM, Ollama, llama.cpp) through autogen-ext's client.

autogen-ext folds cached tokens into RequestUsage.prompt_tokens, so the SDK's completions.create is
wrapped to read usage.prompt_tokens_details.cached_tokens (non-streaming calls; streamed calls report
cache_read 0). OpenAI bills no cache writes: cache_write is always 0.
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import httpx2
from autogen_core.models import CreateResult, LLMMessage, ModelInfo
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from autogen_ext.models.openai import _model_info as autogen_model_info

from crew.agent.models.anthropic_client import estimate_tokens
from crew.agent.models.usage import CallUsage

log = logging.getLogger(__name__)

# Servers that speak the OpenAI API need no key; the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"
DEFAULT_CONTEXT_TOKENS = 128_000
LOCAL_MODEL_INFO = ModelInfo(
    vision=False, function_calling=True, json_output=True, family="unknown", structured_output=False
)
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
# For OpenAI models newer than autogen-ext's table.
UNKNOWN_OPENAI_MODEL_INFO = ModelInfo(
    vision=False, function_calling=True, json_output=True, family="unknown", structured_output=True
)
# Per create() call: a list the wrapped SDK call appends its usage to (the SDK call runs in a task that
# copies this context, so it shares the same list object).
_capture: contextvars.ContextVar[list[tuple[CallUsage, str | None]] | None] = contextvars.ContextVar(
    "_capture", default=None)


def usage_from_completion(completion: Any) -> CallUsage | None:
    u = getattr(completion, "usage", None)
    if u is None:
        return None
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    prompt = u.prompt_tokens or 0
    return CallUsage(input=max(0, prompt - cached), output=u.completion_tokens or 0, cache_read=cached)


def _wrap(resource: Any, name: str) -> None:
    original = getattr(resource, name, None)
    if original is None:
        return

    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = await original(*args, **kwargs)
        sink = _capture.get()
        usage = usage_from_completion(result)
        if sink is not None and usage is not None:
            choices = getattr(result, "choices", None) or [None]
            sink.append((usage, getattr(choices[0], "finish_reason", None)))
        return result

    setattr(resource, name, wrapped)


class OpenAIClient(OpenAIChatCompletionClient):
    """autogen-ext's client plus last_usage / total_call_usage (with cached tokens) and offline token counts."""

    def __init__(self, *, local: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.model: str = kwargs["model"]
        self.local = local
        self.output_limit_param = "max_tokens" if local else "max_completion_tokens"
        self.max_tokens = LOCAL_MAX_OUTPUT_TOKENS if local else OPENAI_MAX_OUTPUT_TOKENS
        self.last_usage = CallUsage()
        self.total_call_usage = CallUsage()
        _wrap(self._client.chat.completions, "create")
        _wrap(self._client.chat.completions, "parse")
        beta = getattr(getattr(getattr(self._client, "beta", None), "chat", None), "completions", None)
        if beta is not None and beta is not self._client.chat.completions:
            _wrap(beta, "parse")

    def _record(self, result: CreateResult, captured: list[tuple[CallUsage, str | None]]) -> None:
        if captured:
            usage = captured[-1][0]
        else:
            usage = CallUsage(input=result.usage.prompt_tokens, output=result.usage.completion_tokens)
        self.last_usage = usage
        self.total_call_usage = self.total_call_usage + usage

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:  # type: ignore[override]
        extra = dict(kwargs.get("extra_create_args") or {})
        if not {"max_tokens", "max_completion_tokens"} & set(extra):
            extra[self.output_limit_param] = self.max_tokens
        if self.local:
            limit = extra.get("max_tokens") or extra.get("max_completion_tokens")
            extra.setdefault("timeout", request_timeout_s(estimate_tokens(messages, kwargs.get("tools") or []), limit))
        kwargs["extra_create_args"] = extra
        captured: list[CallUsage] = []
        token = _capture.set(captured)
        try:
            result = await super().create(messages, **kwargs)
        finally:
            _capture.reset(token)
        self._record(result, captured)
        if captured and captured[-1][1] == "length":
            # autogen reports tool calls cut off at the output limit as complete: they must not be run; and a
            # text cut off there is no answer either (crew/agent/session.py).
            result = result.model_copy(update={"finish_reason": "length"})
        return result

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        async for chunk in super().create_stream(messages, **kwargs):
            if isinstance(chunk, CreateResult):
                self._record(chunk, [])
            yield chunk

    # chars/4 rather than tiktoken: tiktoken downloads its encodings, and tests and runs may be offline.
    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        return estimate_tokens(messages, tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:  # noqa: B006
        try:
            limit = autogen_model_info.get_token_limit(self.model)
        except KeyError:
            limit = DEFAULT_CONTEXT_TOKENS
        return max(0, limit - self.count_tokens(messages, tools=tools))


def request_timeout_s(prompt_tokens: int, max_output_tokens: int) -> float:
    """How long a request may take before it is abandoned, scaled to its prompt and its output limit."""
    return BASE_TIMEOUT_S + prompt_tokens / PREFILL_TOKENS_PER_S + max_output_tokens / DECODE_TOKENS_PER_S


def _known_info(model: str) -> ModelInfo | None:
    try:
        return autogen_model_info.get_info(model)
    except (KeyError, ValueError):
        return None


def make_openai_client(
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    http_client: httpx2.AsyncClient | None = None,
) -> OpenAIClient:
    """autogen-ext's OpenAIChatCompletionClient for OpenAI, or for any OpenAI-compatible server at base_url."""
    # max_retries=0: retries belong to RetryingClient.
    kwargs: dict[str, Any] = {"model": model, "max_retries": 0}
    if base_url:
        kwargs["base_url"] = base_url
        kwargs["model_info"] = dict(LOCAL_MODEL_INFO)
        kwargs["api_key"] = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY
    else:
        if api_key:
            kwargs["api_key"] = api_key
        if _known_info(model) is None:
            log.info("model %s is not in autogen-ext's table; assuming tools and JSON output", model)
            kwargs["model_info"] = dict(UNKNOWN_OPENAI_MODEL_INFO)
    if http_client is not None:
        kwargs["http_client"] = http_client
    return OpenAIClient(local=bool(base_url), **kwargs)
