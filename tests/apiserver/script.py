"""Scripted model answers per role, and how a request's role is recognised (format: see server.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crew.agent.replay import load_script

# The crew's system prompts open with "You are the supervisor" / "You are the engineer" / "You are the scout".
CREW_ROLE = re.compile(r"^\s*You are the (supervisor|engineer|scout)\b")
RoleOf = Callable[[str], "str | None"]
# The replay script's `error:` kinds, as the faults a real service sends.
REPLAY_ERRORS = {"rate_limit": 429, "overloaded": 529, "outage": 529, "connection": 0}
KEYS = {"text", "thought", "thinking", "tool_calls", "stop_reason", "refusal", "refusal_category", "fault",
        "retry_after", "error", "output_tokens", "delay_s"}


def crew_role(system: str) -> str | None:
    """The crew role whose system prompt this is, or None."""
    match = CREW_ROLE.match(system)
    return match.group(1) if match else None


class ScriptError(ValueError):
    """A script item the server cannot play: the test's own mistake."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str  # a string is sent as is (malformed JSON included)
    id: str | None = None


@dataclass(frozen=True)
class Answer:
    """One scripted model turn: content, a stop reason, or a fault instead of an answer."""

    text: str = ""  # the final text, or with tool_calls the text before them
    thinking: str = ""  # a thinking block (with a signature) before everything else
    tool_calls: tuple[ToolCall, ...] = ()
    truncated: bool = False  # stop_reason max_tokens: the last tool call's input is cut off
    refusal: bool = False
    refusal_category: str | None = None  # stop_details.category: cyber, bio, frontier_llm, ...
    fault: int | None = None  # an HTTP status instead of an answer; 0 drops the connection
    retry_after: float | None = None
    output_tokens: int | None = None
    delay_s: float = 0.0


def parse_answer(item: Any, where: str) -> Answer:
    if not isinstance(item, Mapping):
        raise ScriptError(f"{where}: a script item must be a mapping, got {item!r}")
    unknown = set(item) - KEYS
    if unknown:
        raise ScriptError(f"{where}: unknown keys {sorted(unknown)}; use {sorted(KEYS)}")
    fault = item.get("fault")
    if "error" in item:
        if item["error"] not in REPLAY_ERRORS:
            raise ScriptError(f"{where}: unknown error '{item['error']}'; use one of {sorted(REPLAY_ERRORS)}")
        fault = REPLAY_ERRORS[item["error"]]
    calls = tuple(_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(item.get("tool_calls") or []))
    stop = item.get("stop_reason")
    if stop not in (None, "max_tokens"):
        raise ScriptError(f"{where}: stop_reason may only be max_tokens (tool_use/end_turn follow from the content; "
                          "for a refusal write `refusal: TEXT`)")
    refusal = item.get("refusal")
    text = item.get("thought") or item.get("text") or (refusal if isinstance(refusal, str) else "")
    return Answer(text=str(text), thinking=str(item.get("thinking") or ""), tool_calls=calls,
                  truncated=stop == "max_tokens", refusal=bool(refusal),
                  refusal_category=item.get("refusal_category"), fault=fault,
                  retry_after=item.get("retry_after"), output_tokens=item.get("output_tokens"),
                  delay_s=float(item.get("delay_s") or 0))


def _tool_call(call: Any, where: str) -> ToolCall:
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        raise ScriptError(f"{where}: a tool call needs a name, e.g. {{name: run_bash, arguments: {{command: ls}}}}")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ScriptError(f"{where}: arguments must be a mapping or a string")
    return ToolCall(call["name"], arguments, call.get("id"))


@dataclass
class Script:
    """Each role's answers, handed out in order; thread-safe (the server answers requests concurrently)."""

    answers: dict[str, list[Answer]]
    served: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, script: Mapping[str, Sequence[Any]] | str | Path) -> Script:
        """From a mapping role -> items, a .yaml/.json script or a run's trace.jsonl (crew.agent.replay's formats)."""
        raw = load_script(Path(script)) if isinstance(script, str | Path) else script
        if not isinstance(raw, Mapping):
            raise ScriptError("a script maps roles to lists of answers, e.g. {engineer: [{text: done}]}")
        return cls({role: [parse_answer(item, f"{role}[{i}]") for i, item in enumerate(items)]
                    for role, items in raw.items()})

    def next(self, role: str) -> tuple[int, Answer] | None:
        """The role's next answer and its position, or None when the role has none left."""
        with self._lock:
            position = self.served.get(role, 0)
            answers = self.answers.get(role, [])
            if position >= len(answers):
                return None
            self.served[role] = position + 1
            return position, answers[position]

    def remaining(self) -> dict[str, int]:
        with self._lock:
            return {role: len(items) - self.served.get(role, 0) for role, items in self.answers.items()
                    if len(items) > self.served.get(role, 0)}
