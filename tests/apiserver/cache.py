"""Prompt caching as the services account for it, with tokens counted as characters / 4.

Anthropic: the prompt is the sequence of blocks tools -> system -> messages. A block with cache_control is
a breakpoint; at each breakpoint the service looks for a cached prefix ending there or up to 20 blocks
earlier. The longest prefix found is read (and its lifetime refreshed); the prompt up to the last
breakpoint beyond it is written, each part with the TTL of the breakpoint that closes it (5 minutes, or
1 hour with "ttl": "1h"). Prefixes shorter than the model's minimum are not cached.
OpenAI: a prompt sharing at least 1024 tokens with one seen within the retention window has that shared
prefix cached, counted in steps of 128 tokens.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Block = dict[str, Any]


TTL_S = {"5m": 300.0, "1h": 3600.0}
LOOKBACK_BLOCKS = 20
OPENAI_MIN_TOKENS, OPENAI_STEP_TOKENS = 1024, 128


def tokens(chars: int) -> int:
    return chars // 4


def _serialized(block: Any) -> str:
    if isinstance(block, dict):
        block = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, Block | None]]:
    """The prompt as (serialized block, the block itself when it can carry cache_control), in cache order."""
    out: list[tuple[str, Block | None]] = [(_serialized(t), t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        out.append((_serialized({"type": "text", "text": system}), None))
    else:
        out += [(_serialized(b), b) for b in system or []]
    for msg in body.get("messages") or []:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for j, block in enumerate(blocks):
            role = f"{msg.get('role')}:" if j == 0 else ""  # a turn boundary is part of the prompt
            out.append((role + _serialized(block), block if isinstance(content, list) else None))
    return out


@dataclass(frozen=True)
class CacheUsage:
    input: int
    read: int
    write_5m: int = 0
    write_1h: int = 0

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h


@dataclass
class AnthropicCache:
    clock: Callable[[], float]
    min_tokens: int = 1024  # Sonnet's minimum cacheable prompt
    _entries: dict[str, tuple[float, float]] = field(default_factory=dict)  # prefix hash -> (expiry, ttl)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def account(self, body: dict[str, Any]) -> CacheUsage:
        blocks = anthropic_blocks(body)
        keys, ends = [], []
        digest, chars = hashlib.sha256(str(body.get("model")).encode()), 0
        for text, _ in blocks:
            digest.update(text.encode())
            keys.append(digest.hexdigest())
            chars += len(text)
            ends.append(tokens(chars))
        marks = [(i, _ttl(b)) for i, (_, b) in enumerate(blocks) if b is not None and b.get("cache_control")]
        with self._lock:
            now = self.clock()
            read_at = self._longest_hit(marks, keys, now)
            read = ends[read_at] if read_at >= 0 else 0
            writes = {"5m": 0, "1h": 0}
            start = read
            for i, ttl in marks:
                if i <= read_at or ends[i] < self.min_tokens:
                    continue
                writes[ttl] += ends[i] - start
                start = ends[i]
                self._entries[keys[i]] = (now + TTL_S[ttl], TTL_S[ttl])
        total = ends[-1] if ends else 0
        return CacheUsage(total - start, read, writes["5m"], writes["1h"])

    def _longest_hit(self, marks: list[tuple[int, str]], keys: list[str], now: float) -> int:
        best = -1
        for mark, mark_ttl in marks:
            for i in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                expiry, ttl = self._entries.get(keys[i], (0.0, 0.0))
                if expiry > now:
                    # A read refreshes the entry, for the longer of its TTL and the breakpoint's.
                    ttl = max(ttl, TTL_S[mark_ttl])
                    self._entries[keys[i]] = (now + ttl, ttl)
                    best = max(best, i)
                    break
        return best


def _ttl(block: Block) -> str:
    ttl = block["cache_control"].get("ttl", "5m") if isinstance(block["cache_control"], dict) else "5m"
    return ttl if ttl in TTL_S else "5m"


@dataclass
class OpenAICache:
    clock: Callable[[], float]
    retention_s: float = 600.0
    _prompts: list[tuple[float, str, str]] = field(default_factory=list)  # (expiry, model, serialized prompt)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def account(self, body: dict[str, Any]) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of this request."""
        prompt = "".join(_serialized(part) for part in [body.get("tools") or [], *body.get("messages", [])])
        model = str(body.get("model"))
        with self._lock:
            now = self.clock()
            self._prompts = [p for p in self._prompts if p[0] > now]
            shared = max((_common_prefix(prompt, seen) for _, m, seen in self._prompts if m == model), default=0)
            self._prompts.append((now + self.retention_s, model, prompt))
        shared_tokens = tokens(shared)
        if shared_tokens < OPENAI_MIN_TOKENS:
            return tokens(len(prompt)), 0
        steps = (shared_tokens - OPENAI_MIN_TOKENS) // OPENAI_STEP_TOKENS
        return tokens(len(prompt)), OPENAI_MIN_TOKENS + steps * OPENAI_STEP_TOKENS


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search: slice comparisons run in C, prompts are long
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
