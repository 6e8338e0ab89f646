"""An agent's conversation as plain data, kept within a token cap however long the run, never splitting a
tool call from its result.

Compaction, oldest first, until the estimate fits: (1) tool outputs, long texts and long tool arguments
older than the recent window are cut to stubs, (2) whole exchanges (an assistant's tool calls with their
results, or one message) are dropped, each leaving a one-line summary in a note. The first `anchors`
messages (the subtask brief) always stay. Compaction goes down to `low_water` of the cap at once, so the
prompt's prefix then stays the same for many calls (what prompt caching needs).

The estimate counts everything that is sent (texts, thoughts, tool names, arguments and results, plus the
fixed system prompt and tool schemas) and is calibrated by the prompt sizes the API reports (`calibrate`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ELIDED = "[elided to keep the prompt short; the full text is in the run's trace]"
STUB_CHARS = 300
NOTE_PREFIX = "[earlier messages omitted to keep the prompt short"
SUMMARY_LINES = 20  # the note keeps this many one-line summaries of dropped exchanges
PER_MESSAGE, PER_PART = 4, 16  # framing tokens the APIs add around messages and blocks


@dataclass
class Message:
    """One message as the model sees it: a user text, an assistant turn (text and/or tool calls), or the
    results of that turn's tool calls."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, arguments (JSON text)}
    results: list[dict[str, Any]] = field(default_factory=list)  # {call_id, name, content, is_error}


def message_chars(message: Message) -> tuple[int, int]:
    """(characters, parts) of what the API receives for this message."""
    chars = len(message.text)
    chars += sum(len(c["name"]) + len(c["arguments"]) for c in message.calls)
    chars += sum(len(r["name"]) + len(r["content"]) for r in message.results)
    return chars, len(message.calls) + len(message.results) + (1 if message.text else 0)


def estimate_tokens(message: Message) -> int:
    chars, parts = message_chars(message)
    return chars // 4 + PER_MESSAGE + PER_PART * parts


def estimate_text_tokens(text: str) -> int:
    return len(text) // 4


class BoundedContext:
    def __init__(self, max_tokens: int = 32_000, fixed_tokens: int = 0, anchors: int = 1, recent: int = 6,
                 max_messages: int = 400, low_water: float = 0.4) -> None:
        self.max_tokens, self.fixed_tokens = max_tokens, fixed_tokens  # the cap is for the whole prompt
        self.anchors, self.recent, self.max_messages, self.low_water = anchors, recent, max_messages, low_water
        self.scale = 1.0  # real tokens per estimated token, learnt from the API's usage
        self.messages: list[Message] = []
        self.dropped: list[str] = []  # one line per dropped exchange, newest last
        self._sizes: list[int] = []
        self._elided_upto = anchors  # messages before this index are already stubs (or anchors)
        # Each message has an id; a saved state lists ids and each message goes once to an append-only
        # journal (fresh_messages), so saving costs the same at any step.
        self._ids: list[str] = []
        self._fresh: list[tuple[str, Message]] = []

    # -- what is sent -----------------------------------------------------------------------------------

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self._sizes.append(estimate_tokens(message))
        self._ids.append(self._track(message))
        self._compact()

    def drop_unanswered(self) -> None:
        """Take back the last message, a user message the model never answered (its call failed): the turn
        that is made again sends it again, and a resumed run never sends two user messages in a row."""
        if self.messages and self.messages[-1].role == "user":
            self.messages.pop()
            self._sizes.pop()
            self._ids.pop()

    def estimate(self) -> int:
        """The whole prompt's size by the uncalibrated estimate (what `calibrate` compares with)."""
        return self.fixed_tokens + sum(self._sizes)

    def tokens(self) -> int:
        """The whole prompt's estimated size, in the API's tokens."""
        return int(self.scale * self.estimate())

    def calibrate(self, reported_prompt_tokens: int, estimated_prompt_tokens: int) -> None:
        """Move the scale towards what the API counted for a prompt we estimated (never below 1)."""
        if reported_prompt_tokens > 0 and estimated_prompt_tokens > 0:
            ratio = reported_prompt_tokens / estimated_prompt_tokens
            self.scale = max(1.0, 0.7 * self.scale + 0.3 * ratio)

    # -- compaction -------------------------------------------------------------------------------------

    def _limit(self, share: float = 1.0) -> int:
        return int(share * self.max_tokens / self.scale) - self.fixed_tokens

    def _compact(self) -> None:
        total = sum(self._sizes)
        if total <= self._limit() and len(self.messages) <= self.max_messages:
            return
        target_tokens, target_messages = self._limit(self.low_water), int(self.max_messages * self.low_water)
        window_start = len(self.messages) - self.recent
        while total > target_tokens and self._elided_upto < window_start:
            index = self._elided_upto
            stub = _elide(self.messages[index])
            if stub is not self.messages[index]:
                self.messages[index], self._ids[index] = stub, self._track(stub)
                total += estimate_tokens(stub) - self._sizes[index]
                self._sizes[index] = estimate_tokens(stub)
            self._elided_upto += 1
        dropped, old_note = 0, self._sizes[self.anchors] if self._has_note() else 0
        while (total - dropped - old_note + self._note_size() > target_tokens
               or len(self.messages) > target_messages) and len(self.messages) > self.anchors + 3:
            dropped += self._drop_oldest_exchange()
        if dropped:
            self._write_note()  # once per compaction: each note is a new journal entry

    def _drop_oldest_exchange(self) -> int:
        """Remove the oldest unit after the anchors (and the note), summarised for the note; return the tokens
        it freed."""
        start = self.anchors + (1 if self._has_note() else 0)
        end = start + 1
        while end < len(self.messages) and self.messages[end].role == "tool":
            end += 1  # tool calls go together with the results that answer them
        self.dropped.append(summarise(self.messages[start:end]))
        freed = sum(self._sizes[start:end])
        del self.messages[start:end], self._sizes[start:end], self._ids[start:end]
        self._elided_upto = max(self.anchors, self._elided_upto - (end - start))
        return freed

    def _note_size(self) -> int:
        return estimate_tokens(Message("user", note_text(self.dropped))) if self.dropped else 0

    def _write_note(self) -> None:
        note = Message("user", note_text(self.dropped))
        if self._has_note():
            self.messages[self.anchors], self._sizes[self.anchors] = note, estimate_tokens(note)
            self._ids[self.anchors] = self._track(note)
        else:
            self.messages.insert(self.anchors, note)
            self._sizes.insert(self.anchors, estimate_tokens(note))
            self._ids.insert(self.anchors, self._track(note))
            self._elided_upto += 1

    def _has_note(self) -> bool:
        message = self.messages[self.anchors] if len(self.messages) > self.anchors else None
        return message is not None and message.role == "user" and message.text.startswith(NOTE_PREFIX)

    # -- saving -----------------------------------------------------------------------------------------

    def _track(self, message: Message) -> str:
        message_id = uuid.uuid4().hex[:16]
        self._fresh.append((message_id, message))
        return message_id

    def fresh_messages(self) -> list[tuple[str, dict[str, Any]]]:
        """Messages stored since the last call, as (id, plain data), for the caller to journal."""
        fresh, self._fresh = self._fresh, []
        return [(message_id, asdict(message)) for message_id, message in fresh]

    def snapshot(self) -> dict[str, Any]:
        """The context as ids into the message journal: small, whatever the messages weigh."""
        return {"ids": list(self._ids), "dropped": self.dropped[-SUMMARY_LINES:], "elided_upto": self._elided_upto,
                "scale": self.scale}

    def restore(self, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
        """Rebuild from a snapshot and the journal's messages (id -> plain data)."""
        self._ids = list(snapshot["ids"])
        self.messages = [Message(**journal[i]) for i in self._ids]
        self._sizes = [estimate_tokens(m) for m in self.messages]
        self.dropped, self._elided_upto = list(snapshot["dropped"]), snapshot["elided_upto"]
        self.scale, self._fresh = snapshot.get("scale", 1.0), []


def summarise(messages: list[Message]) -> str:
    """One line for a dropped exchange: the calls made and how each ended, or the start of a text."""
    head = messages[0]
    if head.role == "assistant" and head.calls:
        results = {r["call_id"]: r for m in messages[1:] for r in m.results}
        parts = []
        for call in head.calls:
            result = results.get(call["id"])
            outcome = ("error" if result["is_error"] else _first_line(result["content"])) if result else "no result"
            parts.append(f"{call['name']}({_clip(call['arguments'], 60)}) -> {_clip(outcome, 60)}")
        return "; ".join(parts)
    return f"{head.role}: {_clip(_first_line(head.text), 160)}"


def note_text(dropped: list[str]) -> str:
    shown = dropped[-SUMMARY_LINES:]
    older = len(dropped) - len(shown)
    lines = [f"- {line}" for line in shown]
    if older:
        lines.insert(0, f"- ({older} older exchanges)")
    return f"{NOTE_PREFIX}; what they did, oldest first:]\n" + "\n".join(lines)


def _elide(message: Message) -> Message:
    if message.role == "tool":
        results = [{**r, "content": _stub(r["content"])} for r in message.results]
        return Message("tool", results=results)
    if message.role == "assistant" and message.calls:
        calls = [{**c, "arguments": _elide_arguments(c["arguments"])} for c in message.calls]
        return Message("assistant", _stub(message.text), calls=calls)
    if len(message.text) > STUB_CHARS:
        return Message(message.role, _stub(message.text))
    return message


def _elide_arguments(arguments: str) -> str:
    """Long string values cut to a stub; the result stays a JSON object, as the APIs require."""
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return arguments if len(arguments) <= STUB_CHARS else json.dumps({"arguments": _stub(arguments)})
    if not isinstance(value, dict):
        return arguments
    return json.dumps({k: _stub(v) if isinstance(v, str) else v for k, v in value.items()})


def _stub(text: str) -> str:
    return text if len(text) <= STUB_CHARS else text[:STUB_CHARS] + f"\n{ELIDED}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
