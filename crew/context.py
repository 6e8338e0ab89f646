"""A model context that stays within a token cap however long the run, and never splits a tool call
from its result (the failure of autogen's token-limited context).

Compaction, oldest first, until the estimate fits: (1) tool outputs older than the recent window are
cut to a stub, (2) whole exchanges (an assistant's tool calls with their results, or one message) are
dropped and counted in a note. The first `anchors` messages (the task or subtask brief) always stay.
The stored list itself is what is kept, so a saved state is as small as a prompt. The full history is
in the trace.
"""

from __future__ import annotations

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


def estimate_tokens(message: LLMMessage) -> int:
    content = message.content
    if isinstance(content, list):
        return sum(len(str(getattr(c, "content", c))) + len(str(getattr(c, "arguments", ""))) for c in content) // 4 + 4
    return len(str(content)) // 4 + 4


class BoundedContext(ChatCompletionContext):
    def __init__(self, max_tokens: int = 24_000, anchors: int = 1, recent: int = 6,
                 initial_messages: list[LLMMessage] | None = None) -> None:
        super().__init__(initial_messages)
        self.max_tokens, self.anchors, self.recent = max_tokens, anchors, recent
        self.dropped = 0

    async def add_message(self, message: LLMMessage) -> None:
        self._messages.append(message)
        self._compact()

    async def get_messages(self) -> list[LLMMessage]:
        return list(self._messages)

    def tokens(self) -> int:
        return sum(estimate_tokens(m) for m in self._messages)

    def _compact(self) -> None:
        if self.tokens() <= self.max_tokens:
            return
        older = range(self.anchors, max(self.anchors, len(self._messages) - self.recent))
        for index in older:
            self._messages[index] = _elide(self._messages[index])
            if self.tokens() <= self.max_tokens:
                return
        while self.tokens() > self.max_tokens and len(self._messages) > self.anchors + 2:
            self._drop_oldest_exchange()

    def _drop_oldest_exchange(self) -> None:
        start = self.anchors
        if _is_note(self._messages[start]):
            start += 1
        end = start + 1
        # An assistant's tool calls go together with the results that answer them.
        while end < len(self._messages) and isinstance(self._messages[end], FunctionExecutionResultMessage):
            end += 1
        if end >= len(self._messages):
            return
        self.dropped += end - start
        del self._messages[start:end]
        note = UserMessage(content=f"[{self.dropped} earlier messages omitted to keep the prompt short]",
                           source="crew")
        if _is_note(self._messages[self.anchors]):
            self._messages[self.anchors] = note
        else:
            self._messages.insert(self.anchors, note)
        # The kept part must not begin with results whose calls were dropped.
        while len(self._messages) > self.anchors + 1 and isinstance(
            self._messages[self.anchors + 1], FunctionExecutionResultMessage
        ):
            del self._messages[self.anchors + 1]
            self.dropped += 1

    async def clear(self) -> None:
        self._messages = []
        self.dropped = 0

    def snapshot(self) -> dict[str, Any]:
        return {"messages": [m.model_dump() for m in self._messages], "dropped": self.dropped}

    async def save_state(self) -> dict[str, Any]:
        return self.snapshot()

    async def load_state(self, state: dict[str, Any]) -> None:
        from pydantic import TypeAdapter

        adapter = TypeAdapter(LLMMessage)
        self._messages = [adapter.validate_python(m) for m in state.get("messages", [])]
        self.dropped = state.get("dropped", 0)


def _is_note(message: LLMMessage) -> bool:
    return isinstance(message, UserMessage) and str(message.content).startswith("[") and "omitted" in str(
        message.content)


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
