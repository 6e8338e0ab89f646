"""Model clients behind the specs of DESIGN.md: Anthropic, OpenAI(-compatible), retries, usage and prices.

The names load on first use: the SDKs take seconds to import, and a replayed or baseline run needs none.
"""

from importlib import import_module
from typing import Any

_WHERE = {
    "AnthropicClient": "anthropic_client",
    "Answer": "chat",
    "CallUsage": "usage",
    "ChatMessage": "chat",
    "ModelClient": "chat",
    "ModelError": "errors",
    "ModelExhausted": "errors",
    "ModelOutage": "errors",
    "OpenAIClient": "openai_client",
    "Price": "usage",
    "RetryingClient": "retry",
    "ToolCall": "chat",
    "ToolResult": "chat",
    "ToolSpec": "chat",
    "cost_usd": "usage",
    "is_transient": "retry",
    "make_client": "factory",
    "make_openai_client": "openai_client",
    "price_for": "usage",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'crew.agent.models' has no attribute {name!r}")
    return getattr(import_module(f"crew.agent.models.{_WHERE[name]}"), name)
