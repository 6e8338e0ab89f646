"""`replay:PATH` — a model that answers from a script instead of an API.

A script is JSON or YAML with one list per agent, answered in order:

    supervisor:
      - tool_calls: [{name: delegate, arguments: {role: engineer, subtask: "train", minutes: 5}}]
    engineer:
      - text: "I will look at the data first."
      - tool_calls: [{name: run_bash, arguments: {command: "ls data", timeout_s: 30}}]
      - error: rate_limit          # a transient API failure (HTTP 429), retried by the client wrapper
      - tool_calls: [{name: run_bash, arguments: "{not json"}]   # a string is sent as is

A run's trace.jsonl is a script too: it records every model response (`model_response` events).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from crew.agent.models.anthropic_convert import request_params
from crew.agent.models.chat import Answer, ChatMessage, ToolCall, ToolChoice, ToolSpec
from crew.agent.models.errors import ModelExhausted
from crew.agent.models.protocol import check_anthropic_request
from crew.agent.models.usage import CallUsage
from crew.errors import CrewError
from crew.run.events import ModelResponse
from crew.run.rundir import RunDir
from crew.run.trace import parse_lines

REPLAY_MAX_TOKENS = 8192
REPLAY_MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "replay",
                     "structured_output": False}


def load_script(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Per-agent answers from a script file or from a run's trace.jsonl."""
    path = Path(path)
    if path.is_dir() and RunDir(path).trace.is_file():
        path = RunDir(path).trace
    if not path.is_file():
        raise CrewError(f"replay script {path} does not exist", "give a .json/.yaml script or a run's trace.jsonl")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return _script_from_trace(text)
    try:
        script = yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as err:
        raise CrewError(f"replay script {path} is not valid JSON or YAML: {err}", "fix its syntax") from err
    if not isinstance(script, dict) or not all(isinstance(v, list) for v in script.values()):
        raise CrewError(f"replay script {path} must map agent names to lists of answers",
                        "write e.g. supervisor: [{tool_calls: [...]}, ...]")
    return script


def _script_from_trace(text: str) -> dict[str, list[dict[str, Any]]]:
    script: dict[str, list[dict[str, Any]]] = {}
    for event in parse_lines(text.splitlines()):
        if isinstance(event, ModelResponse):
            script.setdefault(event.agent, []).append(event.response)
    return script


def response_record(answer: Answer) -> dict[str, Any]:
    """A model answer as plain data: what the trace keeps and what replay gives back."""
    if not answer.calls:
        return {"text": answer.text}
    record: dict[str, Any] = {"tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                             for c in answer.calls]}
    if answer.text:
        record["text"] = answer.text
    return record


class ReplayClient:
    """Answers one agent's model calls from its list in a script."""

    model = "replay"
    context_tokens = 200_000
    model_info = REPLAY_MODEL_INFO

    def __init__(self, answers: Sequence[Mapping[str, Any]], agent: str = "") -> None:
        self.answers, self.agent, self.position = list(answers), agent, 0
        self.last_usage = CallUsage()
        self.total_call_usage = CallUsage()

    async def create(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     tool_choice: ToolChoice = "auto", extra: Mapping[str, Any] | None = None) -> Answer:
        if self.position >= len(self.answers):
            raise ModelExhausted(f"the replay script has no answer #{self.position + 1} for {self.agent}")
        answer = self.answers[self.position]
        self.position += 1
        if "error" in answer:
            raise _replayed_error(answer["error"])
        # The conversation must be one the real API accepts: the same checks as the test API server.
        params = request_params("replay", REPLAY_MAX_TOKENS, messages, tools, tool_choice, extra)
        check_anthropic_request(params)
        prompt = len(json.dumps(params)) // 4
        result = _answer_from(answer, call_number=self.position)
        completion = max(1, len(json.dumps(response_record(result))) // 4)
        self.last_usage = CallUsage(input=prompt, output=completion)
        self.total_call_usage = self.total_call_usage + self.last_usage
        return Answer(result.text, result.calls, result.finish_reason, self.last_usage)

    async def close(self) -> None:
        return None


def _answer_from(answer: Mapping[str, Any], call_number: int) -> Answer:
    calls = answer.get("tool_calls")
    if calls:
        found = tuple(ToolCall(id=call.get("id") or f"replay_{call_number}_{i}", name=call["name"],
                               arguments=call["arguments"] if isinstance(call["arguments"], str)
                               else json.dumps(call.get("arguments", {})))
                      for i, call in enumerate(calls))
        return Answer(answer.get("text") or "", found, "function_calls")
    return Answer(str(answer.get("text", "")), (), "stop")


def _replayed_error(kind: str) -> Exception:
    """The same exception types a real API raises, so the retry wrapper treats them as it would."""
    import anthropic

    request = httpx.Request("POST", "https://replay.invalid/v1/messages")
    if kind == "rate_limit":
        return anthropic.RateLimitError("replayed 429", response=httpx.Response(429, request=request), body=None)
    if kind in ("overloaded", "outage"):
        return anthropic.InternalServerError("replayed 529 overloaded",
                                             response=httpx.Response(529, request=request), body=None)
    if kind == "connection":
        return anthropic.APIConnectionError(request=request)
    raise CrewError(f"unknown replayed error '{kind}'", "use rate_limit, overloaded, outage or connection")
