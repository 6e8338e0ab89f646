"""Answer and fault bodies in the services' own shapes: ids, stop reasons, usage, error types, headers."""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

from tests.apiserver.cache import CacheUsage, tokens
from tests.apiserver.script import Answer, ScriptError, ToolCall

BASE62 = string.ascii_letters + string.digits
Reply = tuple[int, dict[str, str], dict[str, Any]]  # status, headers, JSON body


@dataclass
class Ids:
    """Ids shaped like the services' (toolu_01..., msg_01..., req_011C..., chatcmpl-..., call_...)."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def _chars(self, n: int) -> str:
        return "".join(self.rng.choice(BASE62) for _ in range(n))

    def tool_use(self) -> str:
        return "toolu_01" + self._chars(22)

    def message(self) -> str:
        return "msg_01" + self._chars(22)

    def request(self) -> str:
        return "req_011C" + self._chars(20)

    def completion(self) -> str:
        return "chatcmpl-" + self._chars(29)

    def call(self) -> str:
        return "call_" + self._chars(24)

    def signature(self) -> str:
        return base64.b64encode(self.rng.randbytes(48)).decode()


def _input_object(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, dict):
        return dict(call.arguments)
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ScriptError(f"tool call {call.name}: the Anthropic API always returns an object as tool input, "
                          f"not {call.arguments!r}")
    return value


def cut_input(arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool input cut off mid-generation: its last value half written (a string) or not yet there."""
    cut = dict(arguments)
    if not cut:
        return cut
    key, value = list(cut.items())[-1]
    if isinstance(value, str) and len(value) > 1:
        cut[key] = value[: len(value) // 2]
    else:
        del cut[key]
    return cut


def _limit(body: dict[str, Any], *names: str) -> int | None:
    return next((body[n] for n in names if isinstance(body.get(n), int)), None)


def anthropic_message(answer: Answer, body: dict[str, Any], usage: CacheUsage, ids: Ids) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer.thinking:
        content.append({"type": "thinking", "thinking": answer.thinking, "signature": ids.signature()})
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    for call in answer.tool_calls:
        content.append({"type": "tool_use", "id": call.id or ids.tool_use(), "name": call.name,
                        "input": _input_object(call)})
    output = answer.output_tokens or tokens(len(json.dumps(content))) + 1
    max_tokens = _limit(body, "max_tokens")
    truncated = answer.truncated or (max_tokens is not None and output > max_tokens)
    if answer.refusal:
        stop = "refusal"
    elif truncated:
        stop = "max_tokens"
        output = max_tokens or output
        if content and content[-1]["type"] == "tool_use":
            content[-1]["input"] = cut_input(content[-1]["input"])
        elif content and content[-1]["type"] == "text" and not answer.truncated:
            content[-1]["text"] = content[-1]["text"][: output * 4]
    else:
        stop = "tool_use" if answer.tool_calls else "end_turn"
    details = {"type": "refusal", "category": answer.refusal_category, "explanation": None} if answer.refusal else None
    return {
        "id": ids.message(), "type": "message", "role": "assistant", "model": body.get("model"),
        "content": content, "stop_reason": stop, "stop_sequence": None, "stop_details": details,
        "usage": {"input_tokens": usage.input, "cache_creation_input_tokens": usage.write,
                  "cache_read_input_tokens": usage.read,
                  "cache_creation": {"ephemeral_5m_input_tokens": usage.write_5m,
                                     "ephemeral_1h_input_tokens": usage.write_1h},
                  "output_tokens": output, "service_tier": "standard"},
    }


def openai_completion(answer: Answer, body: dict[str, Any], prompt: int, cached: int, ids: Ids,
                      created: int) -> dict[str, Any]:
    calls = [{"id": c.id or ids.call(), "type": "function",
              "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str)
                           else json.dumps(c.arguments)}} for c in answer.tool_calls]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None, "refusal": None,
                               "annotations": []}
    reasoning = tokens(len(answer.thinking))
    output = answer.output_tokens or tokens(len(json.dumps([answer.text, calls]))) + 1 + reasoning
    limit = _limit(body, "max_completion_tokens", "max_tokens")
    if answer.refusal:
        message.update(content=None, refusal=answer.text or "I'm sorry, I can't help with that.")
        finish = "stop"
    elif answer.truncated or (limit is not None and output > limit):
        finish, output = "length", limit or output
        if answer.text and not answer.truncated:  # the text ends where the limit cut it (characters / 4)
            message["content"] = answer.text[: output * 4]
        if calls:
            arguments = calls[-1]["function"]["arguments"]
            calls[-1]["function"]["arguments"] = arguments[: len(arguments) // 2]
    else:
        finish = "tool_calls" if calls else "stop"
    if calls:
        message["tool_calls"] = calls
    return {
        "id": ids.completion(), "object": "chat.completion", "created": created, "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
                  "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": reasoning, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0,
                                                "rejected_prediction_tokens": 0}},
        "service_tier": "default", "system_fingerprint": "fp_apiserver",
    }


ANTHROPIC_FAULTS = {
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    529: ("overloaded_error", "Overloaded"),
    500: ("api_error", "Internal server error"),
    400: ("invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum"),
}


def anthropic_fault(status: int, retry_after: float | None, request_id: str) -> Reply:
    kind, message = ANTHROPIC_FAULTS.get(status, ("api_error", "Internal server error"))
    headers = {"request-id": request_id, "x-should-retry": "true"}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return status, headers, {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def openai_fault(status: int, retry_after: float | None, model: str) -> Reply:
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    if status == 429:
        wait = f"{retry_after:g}s" if retry_after is not None else "1s"
        message = (f"Rate limit reached for {model} on requests per min (RPM): Limit 500, Used 500, Requested 1. "
                   f"Please try again in {wait}.")
        return status, headers, {"error": {"message": message, "type": "requests", "param": None,
                                           "code": "rate_limit_exceeded"}}
    if status == 529:  # OpenAI's overload is a 503
        return 503, headers, {"error": {"message": "The engine is currently overloaded, please try again later",
                                        "type": "server_error", "param": None, "code": None}}
    return status, headers, {"error": {"message": "The server had an error while processing your request. Sorry "
                                                  "about that!", "type": "server_error", "param": None, "code": None}}
