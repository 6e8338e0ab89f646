"""RetryingClient over the real clients and recorded error responses: 429, 529/500 storms, 400, dropped links."""

import asyncio
import random

import httpx2
import pytest

from crew.agent.models import AnthropicClient, ModelOutage, RetryingClient, make_openai_client
from crew.agent.models.chat import ChatMessage
from crew.agent.models.retry import is_transient, retry_after_s
from crew.errors import EXIT_INTERRUPTED

from .helpers import FakeTime, Recorder, Reply

MESSAGES = [ChatMessage("user", "status?")]


def anthropic_retrying(rec: Recorder, fake: FakeTime, **options) -> RetryingClient:
    inner = AnthropicClient("claude-sonnet-4-6", api_key="k", http_client=rec.client())
    return RetryingClient(inner, sleep=fake.sleep, clock=fake.clock, rng=random.Random(0), **options)


def test_429_then_200_retried_honouring_retry_after():
    rec = Recorder([Reply(429, "anthropic_rate_limit.json", {"retry-after": "7"}),
                    Reply(body="anthropic_final_text.json")])
    fake, seen = FakeTime(), []
    client = anthropic_retrying(rec, fake, on_retry=lambda attempt, delay, err: seen.append((attempt, delay)))
    result = asyncio.run(client.create(MESSAGES))
    assert result.finish_reason == "stop"
    assert len(rec.requests) == 2 and fake.sleeps == [7.0] and seen == [(1, 7.0)]
    assert client.last_usage.cache_read == 2048  # delegated to the inner client
    assert client.model_info["function_calling"]


def test_overload_storm_ends_in_model_outage():
    rec = Recorder([Reply(529, "anthropic_overloaded.json"), Reply(500, "anthropic_api_error.json")])
    fake = FakeTime()
    client = anthropic_retrying(rec, fake, max_attempts=5, base_delay_s=2.0, max_delay_s=60.0)
    with pytest.raises(ModelOutage) as info:
        asyncio.run(client.create(MESSAGES))
    assert len(rec.requests) == 5 and len(fake.sleeps) == 4
    # Full jitter: each wait lies in [0, min(60, 2 * 2^(n-1))].
    assert all(0 <= s <= min(60.0, 2.0 * 2**i) for i, s in enumerate(fake.sleeps))
    err = info.value
    assert err.exit_code == EXIT_INTERRUPTED and err.hint and "HTTP 500" in err.message
    assert status_code(err.last_error) == 500


def status_code(err):
    return getattr(err, "status_code", None)


def test_outage_by_time_before_attempts_run_out():
    rec = Recorder([Reply(503, "anthropic_api_error.json", {"retry-after": "100"})])
    fake = FakeTime()
    client = anthropic_retrying(rec, fake, max_attempts=50, give_up_after_s=250.0)
    with pytest.raises(ModelOutage):
        asyncio.run(client.create(MESSAGES))
    assert fake.sleeps == [100.0, 100.0] and len(rec.requests) == 3


def test_bad_request_not_retried():
    rec = Recorder([Reply(400, "anthropic_bad_request.json"), Reply(body="anthropic_final_text.json")])
    fake = FakeTime()
    with pytest.raises(Exception) as info:
        asyncio.run(anthropic_retrying(rec, fake).create(MESSAGES))
    assert status_code(info.value) == 400 and not isinstance(info.value, ModelOutage)
    assert len(rec.requests) == 1 and fake.sleeps == []


def test_dropped_connection_retried():
    rec = Recorder([Reply(raise_error=httpx2.RemoteProtocolError("peer closed connection")),
                    Reply(raise_error=httpx2.ReadTimeout("read timed out")),
                    Reply(body="anthropic_final_text.json")])
    fake = FakeTime()
    result = asyncio.run(anthropic_retrying(rec, fake).create(MESSAGES))
    assert result.text.startswith("The loss") and len(fake.sleeps) == 2


def test_openai_rate_limit_retried():
    rec = Recorder([Reply(429, "openai_rate_limit.json", {"retry-after-ms": "1500"}),
                    Reply(body="openai_final_text.json")])
    fake = FakeTime()
    inner = make_openai_client("gpt-4.1", api_key="k", http_client=rec.client())
    result = asyncio.run(RetryingClient(inner, sleep=fake.sleep, clock=fake.clock).create(MESSAGES))
    assert result.text.startswith("The loss") and fake.sleeps == [1.5]


def test_classification_and_retry_after_parsing():
    assert is_transient(TimeoutError()) and is_transient(httpx2.ConnectError("refused"))
    assert not is_transient(ValueError("bad")) and not is_transient(KeyError("x"))

    class Err(Exception):
        def __init__(self, headers):
            self.response = httpx2.Response(429, headers=headers)

    assert retry_after_s(Err({"retry-after": "3"})) == 3.0
    assert retry_after_s(Err({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after_s(Err({})) is None
    assert retry_after_s(ValueError()) is None
