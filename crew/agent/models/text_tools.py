"""Tool calls written as text, for models without (working) native function calling.

Small local models often answer with the right call in plain text: fenced JSON, `<tool_call>` tags (Qwen,
Hermes) or an OpenAI-shaped `{"function": {...}}` object, and no `tool_calls`. `find_text_calls` finds
such calls among the tools an agent has. The agent uses it to tell the model that a call written as text was
not run (crew/agent/session.py). With a spec ending in `?tools=text` (crew/agent/specs.py), `TextToolsClient` makes that
the protocol: the tools are described in the system prompt instead of the API's `tools` field, calls are
parsed from the answer's text and handed to the agent as ordinary calls (the same validation as native ones),
and the conversation is sent back as plain text turns, which any chat server accepts.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crew.agent.models.chat import (
    Answer,
    ChatMessage,
    ModelClient,
    ToolCall,
    ToolChoice,
    ToolSpec,
    WrappedClient,
    forced_tool,
)

TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
FENCED = re.compile(r"```[a-zA-Z]*\s*\n(.*?)```", re.DOTALL)
NAME_KEYS = ("name", "tool", "tool_name", "function")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
HOW_TO_CALL = ("Call tools through the API's function calling (tool_calls); a call written in your text is "
               "never run.")


def find_text_calls(text: str, tool_names: Iterable[str]) -> list[dict[str, str]]:
    """The tool calls written in `text`, in order, as {"name", "arguments" (a JSON object as text)}; only
    calls of tools in `tool_names` count, so prose that happens to hold JSON is left alone."""
    names = set(tool_names)
    calls: list[dict[str, str]] = []
    for obj in _json_objects(text):
        for call in _calls_in(obj):
            if call["name"] in names:
                calls.append(call)
    return calls


def _json_objects(text: str) -> list[Any]:
    """JSON values in tagged blocks, fenced blocks and bare in the text, in the order they were written."""
    found: list[tuple[int, Any]] = []
    spans: list[tuple[int, int]] = []
    for pattern in (TAGGED, FENCED):
        for match in pattern.finditer(text):
            if any(a <= match.start() < b for a, b in spans):
                continue
            spans.append(match.span())
            found += [(match.start(), value) for _, value in _decode_all(match.group(1))]
    # What is outside the blocks, blanked inside them so that positions stay the text's own.
    rest = "".join(" " if any(a <= i < b for a, b in spans) else ch for i, ch in enumerate(text))
    found += _decode_all(rest)
    return [value for _, value in sorted(found, key=lambda item: item[0])]


def _decode_all(text: str) -> list[tuple[int, Any]]:
    decoder, values, i = json.JSONDecoder(), [], 0
    while (i := _next_open(text, i)) != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        values.append((i, value))
        i = end
    return values


def _next_open(text: str, start: int) -> int:
    positions = [p for p in (text.find("{", start), text.find("[", start)) if p != -1]
    return min(positions, default=-1)


def _calls_in(value: Any) -> list[dict[str, str]]:
    if isinstance(value, list):
        return [call for item in value for call in _calls_in(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _calls_in(value["tool_calls"])
    if isinstance(value.get("function"), dict):  # OpenAI's shape: {"type": "function", "function": {...}}
        return _calls_in(value["function"])
    name = next((value[k] for k in NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None:
        return []
    arguments = next((value[k] for k in ARGUMENT_KEYS if k in value), {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return [{"name": name, "arguments": arguments}]


def not_run_note(calls: list[dict[str, str]]) -> str:
    """What the model is told after an answer that held calls as text only."""
    names = ", ".join(dict.fromkeys(c["name"] for c in calls))
    return f"[crew] Your last answer wrote a call of {names} as text, so it was NOT run. {HOW_TO_CALL}"


# -- text tools as the protocol --------------------------------------------------------------------


def tools_prompt(tools: Sequence[ToolSpec], only: str | None = None) -> str:
    """The tools described in the system prompt, and how to call them in text."""
    lines = [f"- {t.name}: {t.description}\n  parameters: "
             f"{json.dumps(t.parameters.get('properties', {}))}" for t in tools]
    must = f"You must call {only} now.\n" if only else ""
    return ("\n\n# Tools\nTo call a tool, write one block per call and nothing after it:\n"
            '<tool_call>\n{"name": "TOOL", "arguments": {...}}\n</tool_call>\n'
            "The results come back in the next message. Available tools:\n" + must + "\n".join(lines))


def as_text_turns(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation without native tool calls: calls as the text the model wrote them in, results as a
    user message, and adjacent user messages merged (chat templates want the roles to alternate)."""
    out: list[ChatMessage] = []
    for message in messages:
        if message.calls:
            calls = "\n".join(f'<tool_call>\n{json.dumps({"name": c.name, "arguments": _loads(c.arguments)})}\n'
                              "</tool_call>" for c in message.calls)
            message = ChatMessage("assistant", "\n".join(filter(None, [message.text, calls])))
        elif message.role == "tool":
            message = ChatMessage("user", "\n\n".join(f"[result of {r.name}]{' (error)' if r.is_error else ''}\n"
                                                      f"{r.content}" for r in message.results))
        if message.role == "user" and out and out[-1].role == "user":
            message = ChatMessage("user", f"{out.pop().text}\n\n{message.text}")
        out.append(message)
    return out


def _loads(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


class TextToolsClient(WrappedClient):
    """Wraps a client: tools travel as text both ways; answers that hold calls come back as native calls."""

    def __init__(self, inner: ModelClient) -> None:
        super().__init__(inner)
        self._calls = 0

    async def create(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> Answer:
        prompt = tools_prompt(tools, forced_tool(tool_choice))
        sent = [ChatMessage("system", m.text + prompt) if m.role == "system" else m for m in as_text_turns(messages)]
        answer = await self.inner.create(sent, extra=extra)
        if answer.calls:
            return answer
        calls = find_text_calls(answer.text, [t.name for t in tools])
        if not calls:
            return answer
        found = []
        for call in calls:
            self._calls += 1
            found.append(ToolCall(id=f"text-call-{self._calls}", **call))
        thought = re.split(r"<tool_call>|```|\{", answer.text, maxsplit=1)[0].strip()
        finish = "length" if answer.finish_reason == "length" else "function_calls"
        return dataclasses.replace(answer, text=thought, calls=tuple(found), finish_reason=finish)
