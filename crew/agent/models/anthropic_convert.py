"""Our messages and tool specs -> Anthropic Messages API request parts, with prompt-cache breakpoints."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crew.agent.models.chat import ChatMessage, ToolCall, ToolChoice, ToolSpec, forced_tool

log = logging.getLogger(__name__)

Block = dict[str, Any]
Message = dict[str, Any]
# Looks up the blocks of a model turn as received, by the id of its first tool call.
Echo = Callable[[str], list[Block] | None]
EPHEMERAL = {"type": "ephemeral"}
# Sampling knobs we never forward: the current API rejects temperature with top_p, and callers may send them.
DROPPED_ARGS = ("temperature", "top_p", "top_k")
# The API rejects empty text blocks; an empty turn still has to say something.
EMPTY = "(empty)"


def tool_definitions(tools: Sequence[ToolSpec]) -> list[Block]:
    out = []
    for tool in tools:
        params = dict(tool.parameters or {"type": "object", "properties": {}})
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        definition: Block = {"name": tool.name, "input_schema": params}
        if tool.description:
            definition["description"] = tool.description
        out.append(definition)
    return out


def tool_choice_param(choice: ToolChoice) -> Block | None:
    if (name := forced_tool(choice)) is not None:
        return {"type": "tool", "name": name}
    return {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}.get(choice)


def _text(text: str) -> Block:
    return {"type": "text", "text": text or EMPTY}


def _tool_input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments) if call.arguments else {}
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value
    # Keep a malformed call visible to the model rather than dropping it from the history.
    log.warning("tool call %s has non-object arguments; sent as {'arguments': raw}", call.id)
    return {"arguments": call.arguments}


def response_blocks(content: Sequence[Any]) -> list[Block]:
    """A response's blocks as request blocks, in order; thinking blocks keep their signatures."""
    out: list[Block] = []
    for b in content:
        if b.type == "thinking":
            out.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif b.type == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": b.data})
        elif b.type == "text":
            out.append({"type": "text", "text": b.text})
        elif b.type == "tool_use":
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
    return out


def _assistant_blocks(msg: ChatMessage, echo: Echo | None) -> list[Block]:
    if not msg.calls:
        return [_text(msg.text)]
    if echo is not None:
        # Models that think by default need their thinking blocks back, unmodified, with the tool results.
        raw = echo(msg.calls[0].id)
        if raw is not None:
            return copy.deepcopy(raw)
    blocks: list[Block] = [{"type": "text", "text": msg.text}] if msg.text else []
    for call in msg.calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)})
    return blocks


def _result_blocks(msg: ChatMessage) -> list[Block]:
    blocks = []
    for result in msg.results:
        block: Block = {"type": "tool_result", "tool_use_id": result.call_id, "content": result.content or EMPTY}
        if result.is_error:
            block["is_error"] = True
        blocks.append(block)
    return blocks or [_text("")]


def _role_blocks(msg: ChatMessage, echo: Echo | None) -> tuple[str, list[Block]]:
    if msg.role == "user":
        return "user", [_text(msg.text)]
    if msg.role == "assistant":
        return "assistant", _assistant_blocks(msg, echo)
    if msg.role == "tool":
        return "user", _result_blocks(msg)
    if msg.role == "system":
        # A system message after the conversation began becomes a user note: moving it into `system`
        # would change the cached prefix on every call.
        return "user", [_text(f"[system] {msg.text}")]
    raise TypeError(f"unsupported message role {msg.role!r}")


def convert_messages(
    messages: Sequence[ChatMessage], echo: Echo | None = None
) -> tuple[list[Block], list[Message]]:
    """Leading system messages -> system blocks; the rest -> alternating user/assistant messages."""
    system: list[Block] = []
    rest = list(messages)
    while rest and rest[0].role == "system":
        system.append(_text(rest.pop(0).text))
    out: list[Message] = []
    for msg in rest:
        role, blocks = _role_blocks(msg, echo)
        if out and out[-1]["role"] == role:
            # Anthropic requires alternating roles: consecutive same-role turns become one.
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for msg in out:
        if msg["role"] == "user":
            # tool_result blocks must open a user turn, before any text.
            msg["content"].sort(key=lambda b: b["type"] != "tool_result")
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [_text("(conversation start)")]})
    if out and out[-1]["role"] == "assistant":
        # A final assistant turn is a prefill, and the API rejects trailing whitespace there.
        last = out[-1]["content"][-1]
        if last["type"] == "text":
            last["text"] = last["text"].rstrip() or EMPTY
    return system, out


def add_cache_breakpoints(tools: list[Block], system: list[Block], messages: list[Message], ttl: str = "5m") -> None:
    """Mark the stable prefix (tools, system) and the latest turn so the next call reads them from cache.

    Three breakpoints of the four allowed: the prefix is cached in order tools -> system -> messages, so
    the breakpoint on the latest message lets the next call reuse everything up to it. All three have the
    same TTL ("5m", or "1h" when calls are expected to come further apart than five minutes).
    """
    control = dict(EPHEMERAL) if ttl == "5m" else {**EPHEMERAL, "ttl": ttl}
    if tools:
        tools[-1]["cache_control"] = dict(control)
    if system:
        system[-1]["cache_control"] = dict(control)
    if messages and messages[-1]["content"]:
        messages[-1]["content"][-1]["cache_control"] = dict(control)


def request_params(model: str, max_tokens: int, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                   tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None, echo: Echo | None = None,
                   cache_ttl: str = "5m") -> dict[str, Any]:
    """The keyword arguments of messages.create (the request body) for our messages and tools."""
    system, converted = convert_messages(messages, echo=echo)
    tool_defs = tool_definitions(tools)
    add_cache_breakpoints(tool_defs, system, converted, cache_ttl)
    params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": converted}
    if system:
        params["system"] = system
    if tool_defs:
        params["tools"] = tool_defs
        choice = tool_choice_param(tool_choice)
        if choice is not None:
            params["tool_choice"] = choice
    for key, value in (extra or {}).items():
        if key in DROPPED_ARGS:
            log.warning("dropping %s=%r: not sent to the Anthropic API", key, value)
        else:
            params[key] = value
    return params
