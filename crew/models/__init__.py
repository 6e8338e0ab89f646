"""Model clients behind the specs of DESIGN.md: Anthropic, OpenAI(-compatible), retries, usage and prices."""

from crew.models.anthropic_client import AnthropicChatCompletionClient
from crew.models.errors import ModelError, ModelOutage
from crew.models.factory import make_client
from crew.models.openai_client import OpenAIClient, make_openai_client
from crew.models.retry import RetryingClient, is_transient
from crew.models.usage import CallUsage, Price, cost_usd, price_for

__all__ = [
    "AnthropicChatCompletionClient",
    "CallUsage",
    "ModelError",
    "ModelOutage",
    "OpenAIClient",
    "Price",
    "RetryingClient",
    "cost_usd",
    "is_transient",
    "make_client",
    "make_openai_client",
    "price_for",
]
