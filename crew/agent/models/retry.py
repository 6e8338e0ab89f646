"""Retries of transient model-API failures, with exponential backoff and full jitter.

429, 408/409, 5xx (Anthropic's 529 overloaded included), timeouts and dropped connections are retried;
any other error (400, 401, 404, ...) is raised at once. When attempts or time run out: ModelOutage.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from crew.agent.models.chat import Answer, ChatMessage, ModelClient, WrappedClient
from crew.agent.models.errors import ModelOutage

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429}
# How long a model call is retried before the run stops resumable (ModelOutage): an API's outage, and longer for
# a server of one's own (@BASE_URL), which may be restarting and loading its model. `--retry-window` sets it.
RETRY_WINDOW_S = 600.0
LOCAL_RETRY_WINDOW_S = 1800.0
WINDOW_ATTEMPTS = 10_000  # within a window, attempts are bounded by its time, not by their count


def retry_window_s(base_url: str = "", setting_s: float | None = None) -> float:
    if setting_s is not None:
        return setting_s
    return LOCAL_RETRY_WINDOW_S if base_url else RETRY_WINDOW_S
OnRetry = Callable[[int, float, BaseException], Any]


@functools.cache
def _sdk_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(status errors, connection errors) of the SDKs, imported on the first error: the SDKs take seconds to
    import and a replayed run needs none."""
    import anthropic
    import httpx
    import httpx2
    import openai

    connection = (anthropic.APIConnectionError,  # APITimeoutError is a subclass
                  openai.APIConnectionError, httpx.TransportError, httpx2.TransportError, TimeoutError,
                  ConnectionError)
    return (anthropic.APIStatusError, openai.APIStatusError), connection


def status_of(err: BaseException) -> int | None:
    if isinstance(err, _sdk_errors()[0]):
        return err.status_code
    return None


def is_transient(err: BaseException) -> bool:
    status = status_of(err)
    if status is not None:
        return status in RETRY_STATUS or status >= 500
    return isinstance(err, _sdk_errors()[1])


def retry_after_s(err: BaseException) -> float | None:
    """Seconds the server asked us to wait (retry-after-ms, or Retry-After in seconds or as a date)."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    if ms := headers.get("retry-after-ms"):
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def describe(err: BaseException) -> str:
    status = status_of(err)
    return f"HTTP {status}" if status is not None else type(err).__name__


class RetryingClient(WrappedClient):
    """Delegates to `inner`, retrying transient failures; everything else (usage, model_info) is inner's."""

    def __init__(
        self,
        inner: ModelClient,
        *,
        max_attempts: int = 8,
        base_delay_s: float = 2.0,
        max_delay_s: float = 60.0,
        give_up_after_s: float = 900.0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_retry: OnRetry | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(inner)
        self.max_attempts, self.base_delay_s, self.max_delay_s = max_attempts, base_delay_s, max_delay_s
        self.give_up_after_s = give_up_after_s
        self._sleep, self._on_retry, self._clock = sleep, on_retry, clock
        self._rng = rng or random.Random()

    def backoff_s(self, attempt: int, err: BaseException) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^(attempt-1))]; a server's Retry-After wins."""
        asked = retry_after_s(err)
        if asked is not None:
            return asked
        return self._rng.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))

    async def _wait_or_give_up(self, attempt: int, started: float, err: BaseException) -> None:
        if not is_transient(err):
            raise err
        delay = self.backoff_s(attempt, err)
        elapsed = self._clock() - started
        if attempt >= self.max_attempts or elapsed + delay > self.give_up_after_s:
            raise ModelOutage(
                f"model API unavailable: {describe(err)} after {attempt} attempts over {elapsed:.0f}s ({err})",
                "the run stops resumable; `research-crew resume RUN_DIR` when the API is back",
                last_error=err,
            ) from err
        log.warning("model call failed (%s), attempt %d/%d; retrying in %.1fs", describe(err), attempt,
                    self.max_attempts, delay)
        if self._on_retry is not None:
            outcome = self._on_retry(attempt, delay, err)
            if inspect.isawaitable(outcome):
                await outcome
        await self._sleep(delay)

    async def create(self, messages: Sequence[ChatMessage], **options: Any) -> Answer:
        started = self._clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self.inner.create(messages, **options)
            except Exception as err:  # noqa: BLE001 - classified in _wait_or_give_up, re-raised if not transient
                await self._wait_or_give_up(attempt, started, err)
