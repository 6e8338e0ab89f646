"""Model spec text -> a retrying model client (anthropic:MODEL, openai:MODEL, openai:MODEL@BASE_URL)."""

from __future__ import annotations

import os
from typing import Any

from crew.agent.models.chat import ModelClient
from crew.agent.models.errors import ModelError
from crew.agent.models.retry import RetryingClient
from crew.agent.specs import parse_spec


def _key(variable: str, spec: str) -> str:
    # Keys come only from the environment (DESIGN.md), and are never written anywhere by us.
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ModelError(f"model spec '{spec}' needs the environment variable {variable}", f"export {variable}=...")
    return value


def make_client(spec_text: str, **retry_options: Any) -> RetryingClient:
    """A client for an API model spec, wrapped in RetryingClient (retry_options go to it)."""
    spec = parse_spec(spec_text)
    # Each SDK is imported only when its client is made (seconds each).
    if spec.kind == "openai":
        from crew.agent.models.openai_client import make_openai_client
    if spec.kind == "anthropic":
        from crew.agent.models.anthropic_client import AnthropicClient

        inner: ModelClient = AnthropicClient(
            spec.model, api_key=_key("ANTHROPIC_API_KEY", str(spec))
        )
    elif spec.kind == "openai" and spec.base_url:
        inner = make_openai_client(spec.model, base_url=spec.base_url)
    elif spec.kind == "openai":
        inner = make_openai_client(spec.model, api_key=_key("OPENAI_API_KEY", str(spec)))
    else:
        raise ValueError(f"make_client builds API clients only; '{spec}' is handled by the crew itself")
    if spec.tools == "text":
        from crew.agent.models.text_tools import TextToolsClient

        inner = TextToolsClient(inner)
    return RetryingClient(inner, **retry_options)
