"""Token usage per model call (with cache reads and writes) and its cost from a price table."""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from crew.agent.models.errors import ModelError

log = logging.getLogger(__name__)

CACHE_WRITE_1H_FACTOR = 2.0
PRICES_ENV = "RESEARCH_CREW_PRICES"
BUILTIN_PRICES = Path(__file__).with_name("prices.toml")


@dataclass(frozen=True)
class CallUsage:
    """Tokens of one call or a sum of calls. `input` excludes cached tokens (Anthropic's convention)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0  # all cache writes; of them, `cache_write_1h` with the 1-hour lifetime
    cache_write_1h: int = 0

    def __add__(self, other: CallUsage) -> CallUsage:
        return CallUsage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.cache_write_1h + other.cache_write_1h,
        )

    @property
    def prompt_tokens(self) -> int:
        """Everything the model read: what autogen's RequestUsage calls prompt_tokens."""
        return self.input + self.cache_read + self.cache_write


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _parse_table(name: str, table: dict, source: Path) -> Price:
    try:
        inp, out = float(table["input"]), float(table["output"])
        # A table without cache prices assumes no discount and no surcharge.
        return Price(inp, out, float(table.get("cache_read", inp)), float(table.get("cache_write", inp)))
    except (KeyError, TypeError, ValueError) as err:
        hint = "give input and output (and optionally cache_read, cache_write) in USD per million tokens"
        raise ModelError(f"price table {source}: [{name}] is invalid ({err})", hint) from err


def _read(path: Path) -> dict[str, Price]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ModelError(f"cannot read price table {path}: {err}", f"fix or unset {PRICES_ENV}") from err
    return {name: _parse_table(name, table, path) for name, table in data.items() if isinstance(table, dict)}


@lru_cache(maxsize=8)
def _table(override: str) -> dict[str, Price]:
    prices = _read(BUILTIN_PRICES)
    if override:
        # The override replaces or adds whole model tables; models it does not name keep built-in prices.
        prices.update(_read(Path(override)))
    return prices


def load_prices() -> dict[str, Price]:
    return _table(os.environ.get(PRICES_ENV, ""))


def price_for(model: str) -> Price:
    """The model's price: its own table, else the longest table name it starts with, else [default]."""
    prices = load_prices()
    if model in prices:
        return prices[model]
    matches = [name for name in prices if name != "default" and model.startswith(name)]
    if matches:
        return prices[max(matches, key=len)]
    log.debug("no price for model %r; using the default", model)
    return prices["default"]


def has_price(model: str) -> bool:
    """Whether the price table names the model (its own table or a prefix of it), not only [default]."""
    prices = load_prices()
    return model in prices or any(name != "default" and model.startswith(name) for name in prices)


def billed_model(model: str, base_url: str = "") -> str:
    """The name a model is priced by; '' (free) for a model behind a server of one's own (@BASE_URL) that the
    price table does not name: a local model costs nothing per token."""
    return model if not base_url or has_price(model) else ""


def cost_usd(model: str, usage: CallUsage) -> float:
    p = price_for(model)
    total = (
        usage.input * p.input
        + usage.output * p.output
        + usage.cache_read * p.cache_read
        + (usage.cache_write - usage.cache_write_1h) * p.cache_write
        + usage.cache_write_1h * CACHE_WRITE_1H_FACTOR * p.input  # Anthropic bills 1-hour writes at 2x input
    )
    return total / 1_000_000
