"""The cache lifetime follows the gaps between calls, against the protocol-exact API server: calls minutes
apart (job waits) write the 1-hour cache and are billed at its price, close calls the 5-minute one."""

import asyncio

from crew.agent.models import AnthropicClient, cost_usd
from crew.agent.models.chat import ChatMessage

MODEL = "claude-sonnet-4-6"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def ask(client, turns: int, gap_s: float, clock: Clock) -> None:
    async def go() -> None:
        messages = [ChatMessage("system", "You are the engineer. " + "Context. " * 600)]
        for i in range(turns):
            messages.append(ChatMessage("user", f"Step {i}: " + "details " * 200))
            result = await client.create(messages)
            messages.append(ChatMessage("assistant", result.text))
            clock.now += gap_s
        await client.close()

    asyncio.run(go())


def ttls(request: dict) -> set:
    blocks = [*request.get("system", []), *(b for m in request["messages"] for b in m["content"])]
    return {b["cache_control"].get("ttl", "5m") for b in blocks if "cache_control" in b}


def test_calls_minutes_apart_use_and_bill_the_one_hour_cache(api_server):
    clock = Clock()
    server = api_server({"engineer": [{"text": f"answer {i}"} for i in range(8)]}, clock=clock)
    close = AnthropicClient(MODEL, clock=clock)
    ask(close, 3, 30.0, clock)
    assert [ttls(e.request) for e in server.requests()] == [{"5m"}] * 3

    apart = AnthropicClient(MODEL, clock=clock)
    ask(apart, 5, 600.0, clock)  # ten minutes apart: the 5-minute cache would be gone at every call
    later = server.requests()[3:]
    assert [ttls(e.request) for e in later] == [{"5m"}] + [{"1h"}] * 4  # from the first gap seen
    usage = apart.total_call_usage
    assert usage.cache_write_1h > 0 and usage.cache_read > 0  # the 1-hour entry is still there to read
    five_minute_price = cost_usd(MODEL, usage.__class__(cache_write=usage.cache_write))
    assert cost_usd(MODEL, usage.__class__(cache_write=usage.cache_write, cache_write_1h=usage.cache_write)) > \
        five_minute_price  # a 1-hour write is billed at 2x input, not at the 5-minute 1.25x
