"""A model context that stays within a token cap however long the run, and never splits a tool call
from its result (the failure of autogen's token-limited context).

Compaction, oldest first, until the estimate fits: (1) tool outputs and long texts older than the
recent window are cut to a stub, (2) whole exchanges (an assistant's tool calls with their results,
or one message) are dropped and counted in a note. The first `anchors` messages (the subtask brief)
always stay. The stored list itself is what is kept, so a saved state is as small as a prompt; the full
history is in the trace. Token counts are kept incrementally, so a step costs the same at any length.
"""

from __future__ import annotations

import uuid
from typing import Any

from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)

ELIDED = "[output elided to keep the prompt short; the full output is in the run's logs and trace]"
STUB_CHARS = 300
NOTE_PREFIX = "[earlier messages omitted"


def estimate_tokens(message: LLMMessage) -> int:
    """Four characters a token, over what the API would see (tool names, arguments, results)."""
    content = message.content
    if isinstance(content, str):
        return len(content) // 4 + 4
    chars = sum(len(str(getattr(part, "content", ""))) + len(getattr(part, "name", "") or "")
                + len(getattr(part, "arguments", "") or "") + 16 for part in content)
    return chars // 4 + 4


def estimate_text_tokens(text: str) -> int:
    return len(text) // 4


class BoundedContext(ChatCompletionContext):
    def __init__(self, max_tokens: int = 24_000, anchors: int = 1, recent: int = 6, max_messages: int = 400,
                 low_water: float = 0.4, initial_messages: list[LLMMessage] | None = None) -> None:
        super().__init__(initial_messages)
        self.max_tokens, self.anchors, self.recent = max_tokens, anchors, recent
        # Many tiny messages fit the token cap too; a count cap keeps each step's work bounded as well.
        self.max_messages = max_messages
        # Compaction goes down to this share of the caps at once, not just under them: the prompt's prefix
        # then stays the same for many calls, which is what prompt caching needs.
        self.low_water = low_water
        self.dropped = 0
        self._sizes = [estimate_tokens(m) for m in self._messages]
        self._elided_upto = anchors  # messages before this index are already stubs (or anchors)
        # Each stored message has an id; a saved state lists ids, and each message is written once to an
        # append-only journal (see fresh_messages), so saving costs the same at any step.
        self._ids: list[str] = []
        self._fresh: list[tuple[str, LLMMessage]] = []
        for message in self._messages:
            self._ids.append(self._track(message))

    def _track(self, message: LLMMessage) -> str:
        message_id = uuid.uuid4().hex[:16]
        self._fresh.append((message_id, message))
        return message_id

    def fresh_messages(self) -> list[tuple[str, dict[str, Any]]]:
        """Messages stored since the last call, as (id, plain data), for the caller to journal."""
        fresh, self._fresh = self._fresh, []
        return [(message_id, message.model_dump()) for message_id, message in fresh]

    async def add_message(self, message: LLMMessage) -> None:
        self._messages.append(message)
        self._sizes.append(estimate_tokens(message))
        self._ids.append(self._track(message))
        self._compact()

    async def get_messages(self) -> list[LLMMessage]:
        return list(self._messages)

    def tokens(self) -> int:
        return sum(self._sizes)

    def _compact(self) -> None:
        total = self.tokens()
        if total <= self.max_tokens and len(self._messages) <= self.max_messages:
            return
        target_tokens = int(self.max_tokens * self.low_water)
        target_messages = int(self.max_messages * self.low_water)
        window_start = len(self._messages) - self.recent
        while total > target_tokens and self._elided_upto < window_start:
            index = self._elided_upto
            stub = _elide(self._messages[index])
            if stub is not self._messages[index]:
                self._messages[index], self._ids[index] = stub, self._track(stub)
            new_size = estimate_tokens(stub)
            total += new_size - self._sizes[index]
            self._sizes[index] = new_size
            self._elided_upto += 1
        while (total > target_tokens or len(self._messages) > target_messages) and len(
                self._messages) > self.anchors + 3:
            total -= self._drop_oldest_exchange()

    def _drop_oldest_exchange(self) -> int:
        """Remove the oldest unit after the anchors (and the note); return the tokens it freed."""
        start = self.anchors + (1 if self._has_note() else 0)
        end = start + 1
        # An assistant's tool calls go together with the results that answer them; results whose calls
        # were dropped before go too.
        while end < len(self._messages) and isinstance(self._messages[end], FunctionExecutionResultMessage):
            end += 1
        freed = sum(self._sizes[start:end])
        del self._messages[start:end], self._sizes[start:end], self._ids[start:end]
        self.dropped += end - start
        self._elided_upto = max(self.anchors, self._elided_upto - (end - start))
        note = UserMessage(content=f"{NOTE_PREFIX}: {self.dropped} so far, to keep the prompt short]", source="crew")
        if self._has_note():
            freed += self._sizes[self.anchors]
            self._messages[self.anchors], self._sizes[self.anchors] = note, estimate_tokens(note)
            self._ids[self.anchors] = self._track(note)
        else:
            self._messages.insert(self.anchors, note)
            self._sizes.insert(self.anchors, estimate_tokens(note))
            self._ids.insert(self.anchors, self._track(note))
            self._elided_upto += 1
        freed -= self._sizes[self.anchors]
        return freed

    def _has_note(self) -> bool:
        message = self._messages[self.anchors] if len(self._messages) > self.anchors else None
        return isinstance(message, UserMessage) and str(message.content).startswith(NOTE_PREFIX)

    async def clear(self) -> None:
        self._messages, self._sizes, self._ids = [], [], []
        self.dropped, self._elided_upto = 0, self.anchors

    def snapshot(self) -> dict[str, Any]:
        """The context as ids into the message journal: small, whatever the messages weigh."""
        return {"ids": list(self._ids), "dropped": self.dropped, "elided_upto": self._elided_upto}

    def restore(self, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
        """Rebuild from a snapshot and the journal's messages (id -> plain data)."""
        from pydantic import TypeAdapter

        adapter = TypeAdapter(LLMMessage)
        self._ids = list(snapshot["ids"])
        self._messages = [adapter.validate_python(journal[i]) for i in self._ids]
        self._sizes = [estimate_tokens(m) for m in self._messages]
        self.dropped, self._elided_upto = snapshot["dropped"], snapshot["elided_upto"]
        self._fresh = []

    async def save_state(self) -> dict[str, Any]:
        return {"messages": [m.model_dump() for m in self._messages], "dropped": self.dropped}

    async def load_state(self, state: dict[str, Any]) -> None:
        from pydantic import TypeAdapter

        adapter = TypeAdapter(LLMMessage)
        await self.clear()
        for message in state.get("messages", []):
            await self.add_message(adapter.validate_python(message))
        self.dropped = state.get("dropped", 0)


def _elide(message: LLMMessage) -> LLMMessage:
    if isinstance(message, FunctionExecutionResultMessage):
        results = [FunctionExecutionResult(content=_stub(r.content), call_id=r.call_id, is_error=r.is_error,
                                           name=r.name) for r in message.content]
        return FunctionExecutionResultMessage(content=results)
    long_text = isinstance(message.content, str) and len(message.content) > 4 * STUB_CHARS
    if long_text and isinstance(message, UserMessage):
        return UserMessage(content=_stub(message.content), source=message.source)
    if long_text and isinstance(message, AssistantMessage):
        return AssistantMessage(content=_stub(message.content), source=message.source)
    return message


def _stub(text: str) -> str:
    return text if len(text) <= STUB_CHARS else text[:STUB_CHARS] + f"\n{ELIDED}"
