"""The OpenAI Chat Completions API's request rules (POST /v1/chat/completions)."""

from __future__ import annotations

import json
import re
from typing import Any

from crew.agent.models.protocol.errors import ProtocolError

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
FUNCTION_NAME_MAX = 64
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def openai_request_errors(body: Any) -> list[ProtocolError]:
    if not isinstance(body, dict):
        return [ProtocolError("We could not parse the JSON body of your request.")]
    found: list[ProtocolError] = []
    if not body.get("model"):
        found.append(ProtocolError("you must provide a model parameter"))
    messages = body.get("messages")
    if messages is None:
        found.append(ProtocolError("Missing required parameter: 'messages'.", "messages", "missing_required_parameter"))
    elif not isinstance(messages, list) or not messages:
        found.append(ProtocolError("Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
                                   "an empty array instead.", "messages", "empty_array"))
    else:
        found += _messages(messages)
    return found + _tools(body)


def _messages(messages: list[Any]) -> list[ProtocolError]:
    """Every tool_calls id is answered by a tool message before the next message of another role."""
    found: list[ProtocolError] = []
    pending: dict[Any, None] = {}  # ids of the last assistant's tool_calls not answered yet, in order
    answering = False  # inside the run of tool messages right after an assistant's tool_calls
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ROLES:
            found.append(ProtocolError(f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', "
                                       "'function', 'tool', and 'developer'.", f"messages[{i}].role", "invalid_value"))
        elif role == "tool":
            call_id = msg.get("tool_call_id")
            if not call_id:
                found.append(ProtocolError("Missing parameter 'tool_call_id': messages with role 'tool' must have a "
                                           "'tool_call_id'.", f"messages.[{i}].tool_call_id"))
            elif not answering or call_id not in pending:
                found.append(ProtocolError("Invalid parameter: messages with role 'tool' must be a response to a "
                                           "preceeding message with 'tool_calls'.", f"messages.[{i}].role"))
            else:
                del pending[call_id]
        else:
            if pending:
                found.append(_unanswered(pending))
            pending = {}
            if role == "assistant":
                calls = msg.get("tool_calls") or []
                if msg.get("content") is None and not calls:
                    found.append(ProtocolError("Invalid value for 'content': expected a string, got null.",
                                               f"messages.[{i}].content"))  # assumed wording
                pending = {c.get("id"): None for c in calls if isinstance(c, dict)}
            answering = bool(pending)
    if pending:
        found.append(_unanswered(pending))
    return found


def _unanswered(pending: dict[Any, None]) -> ProtocolError:
    return ProtocolError("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                         "'tool_call_id'. The following tool_call_ids did not have response messages: "
                         f"{', '.join(map(str, pending))}")


def _tools(body: dict[str, Any]) -> list[ProtocolError]:
    found: list[ProtocolError] = []
    tools = body.get("tools") or []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            found.append(ProtocolError(f"Missing required parameter: 'tools[{i}].function'.", f"tools[{i}].function",
                                       "missing_required_parameter"))
            continue
        name = function.get("name")
        where = f"tools[{i}].function.name"
        if not isinstance(name, str) or not FUNCTION_NAME.match(name):
            found.append(ProtocolError(f"Invalid '{where}': string does not match pattern. Expected a string that "
                                       "matches the pattern '^[a-zA-Z0-9_-]+$'.", where, "invalid_value"))
        elif len(name) > FUNCTION_NAME_MAX:
            found.append(ProtocolError(f"Invalid '{where}': string too long. Expected a string with maximum length "
                                       f"{FUNCTION_NAME_MAX}, but got a string with length {len(name)} instead.",
                                       where, "string_above_max_length"))
        schema = function.get("parameters")
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            got = schema.get("type") if isinstance(schema, dict) else json.dumps(schema)
            found.append(ProtocolError(f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                                       f"'type: \"object\"', got 'type: \"{got}\"'.",
                                       f"tools[{i}].function.parameters", "invalid_function_parameters"))
    for option in ("tool_choice", "parallel_tool_calls"):
        if body.get(option) is not None and not tools:
            found.append(ProtocolError(f"Invalid value for '{option}': '{option}' is only allowed when 'tools' are "
                                       "specified.", option))
    return found
