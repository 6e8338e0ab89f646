"""What both search clients share: a disk cache, a polite request spacing, bounded retries, timeouts."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from checkpoints import atomic_write_json

log = logging.getLogger(__name__)
T = TypeVar("T")


class DiskCache:
    """JSON values on disk keyed by any JSON-able key; entries older than `max_age_s` are ignored."""

    def __init__(self, folder: Path, max_age_s: float = 7 * 24 * 3600) -> None:
        self.folder = folder
        self.max_age_s = max_age_s

    def _path(self, key: Any) -> Path:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
        return self.folder / f"{digest}.json"

    def get(self, key: Any) -> Any | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if time.time() - entry.get("saved", 0) > self.max_age_s:
            return None
        return entry.get("value")

    def put(self, key: Any, value: Any) -> None:
        atomic_write_json(self._path(key), {"key": key, "saved": time.time(), "value": value})


class Spacing:
    """At least `interval_s` between requests to one service, across all threads of this process."""

    def __init__(self, interval_s: float, sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = interval_s
        self._sleep = sleep
        self._lock = threading.Lock()
        self._last = 0.0

    def wait(self) -> None:
        with self._lock:
            delay = self._last + self.interval_s - time.monotonic()
            if delay > 0:
                self._sleep(delay)
            self._last = time.monotonic()


@dataclass
class RetryPolicy:
    """Retry transient failures with exponential backoff while the total wait stays short."""

    attempts: int = 4
    base_s: float = 2.0
    max_total_wait_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep


class GiveUp(Exception):
    """Internal: the service stays unavailable or asks for a wait longer than we accept."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def with_retries(
    call: Callable[[], T],
    classify: Callable[[Exception], float | None],
    policy: RetryPolicy,
    service: str,
) -> T:
    """Run `call`; on an exception `classify` gives the wait before a retry (0 = use backoff) or None
    when the error is not transient (it is re-raised). Raises GiveUp when waiting is not worth it."""
    waited = 0.0
    for attempt in range(policy.attempts):
        try:
            return call()
        except Exception as err:  # classify decides what is transient
            wait = classify(err)
            if wait is None:
                raise
            asked = wait > 0  # the service said how long; otherwise back off exponentially
            wait = wait or policy.base_s * 2**attempt
            if attempt + 1 >= policy.attempts or waited + wait > policy.max_total_wait_s:
                hint = f"retry in about {wait:.0f}s" if asked else "try again in a few minutes"
                raise GiveUp(f"{service} is unavailable or rate-limiting ({_brief(err)}); {hint}") from err
            log.info("%s: %s; retrying in %.1fs", service, _brief(err), wait)
            policy.sleep(wait)
            waited += wait
    raise AssertionError("unreachable")


def _brief(err: Exception) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text[:200]}" if text else type(err).__name__


def timeout_adapter(timeout_s: float) -> Any:
    """A requests adapter that applies a timeout when the caller (a library) set none."""
    from requests.adapters import HTTPAdapter

    class _TimeoutAdapter(HTTPAdapter):
        def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = timeout_s
            return super().send(request, **kwargs)

    return _TimeoutAdapter()
