"""Prompt-cache accounting of the stand-in: the 20-block lookback and refresh-on-read, which decide what
a long agent conversation pays."""

from __future__ import annotations

from tests.apiserver.cache import AnthropicCache

SYSTEM = [{"type": "text", "text": "You are the engineer." + " Rules." * 1000, "cache_control": {"type": "ephemeral"}}]


def request(turns: int, system: list | None = None) -> dict:
    """A conversation `turns` user messages long, with a breakpoint on its last block (as our client marks it)."""
    messages = []
    for i in range(turns):
        if i:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"done {i - 1}"}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"step {i}"}]})
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {"model": "claude-sonnet-4-6", "system": system or SYSTEM, "messages": messages}


def test_a_breakpoint_finds_a_prefix_up_to_20_blocks_back():
    cache = AnthropicCache(clock=lambda: 0.0)
    first = cache.account(request(1))
    assert first.read == 0 and first.write > 1500
    near = cache.account(request(10))  # the first request's prefix ends 18 blocks before the breakpoint
    assert near.read == first.write and 0 < near.write < 300  # only the 18 new blocks are written
    unmarked = [{k: v for k, v in SYSTEM[0].items() if k != "cache_control"}]
    cache = AnthropicCache(clock=lambda: 0.0)
    cache.account(request(1, unmarked))
    # Without a breakpoint on the system prompt, a prefix more than 20 blocks back is not found.
    assert cache.account(request(12, unmarked)).read == 0


def test_a_read_refreshes_the_entry():
    now = [0.0]
    cache = AnthropicCache(clock=lambda: now[0])
    cache.account(request(1))
    for _ in range(3):  # read every 4 minutes: the 5-minute entry never expires
        now[0] += 240
        assert cache.account(request(1)).read > 1500
    now[0] += 301
    assert cache.account(request(1)).read == 0

