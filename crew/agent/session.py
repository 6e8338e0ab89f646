"""One agent between the step loop and its model, on plain data only.

An `AgentSession` is one agent: a model client (crew/agent/models: plain messages in, a plain answer out), its
tools (typed methods; their schemas and argument checks come from crew/agent/autogen_adapter.py) and its
conversation (plain data, crew/agent/context.py). `turn()` is one model call and the tool calls it asked for,
run one after another in order, and returns a typed `Turn`. Whatever happens inside a turn (a tool that raises,
a cancellation at a phase end), every tool call gets its result in the conversation, as the model APIs require.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from crew.agent.autogen_adapter import AgentTool
from crew.agent.context import BoundedContext, Message, estimate_text_tokens
from crew.agent.models.chat import Answer, ChatMessage, ModelClient, ToolCall, ToolResult
from crew.agent.models.text_tools import find_text_calls, not_run_note
from crew.agent.models.usage import CallUsage
from crew.agent.signals import Decision

log = logging.getLogger(__name__)
RESULT_CHARS = 20_000  # a tool result longer than this is cut before the model sees it
CUT_KEPT_CHARS = 2000
CUT_TEXT_NOTE = ("[crew] Your last answer was cut off at the output-token limit ({tokens} tokens) and ignored. "
                 "Answer briefly: a short thought and a tool call.")
TRUNCATED_NOTE = ("[crew] Your previous answer was cut off at the output-token limit in the middle of a tool "
                  "call, so nothing was run. Answer again; keep tool arguments short (write long files in parts).")
MAX_TOKENS_RETRIES = 2


@dataclass
class Turn:
    """One agent turn as plain data."""

    role: str
    text: str = ""  # the answer's text (the thought before tool calls, or the whole answer)
    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    usage: CallUsage = field(default_factory=CallUsage)
    decisions: list[Decision] = field(default_factory=list)
    retried_truncation: int = 0
    text_calls: int = 0  # tool calls the answer wrote as text (not run unless the client parses them)
    cut: bool = False  # a text answer cut off at the output-token limit (e.g. endless newlines)

    @property
    def decision(self) -> Decision | None:
        return self.decisions[0] if self.decisions else None


    def response(self) -> dict[str, Any]:
        """The model's answer as the trace keeps it (and `replay:` plays it back)."""
        response: dict[str, Any] = {"text": self.text} if self.text or not self.calls else {}
        if self.calls:
            response["tool_calls"] = self.calls
        return response


class AgentSession:
    def __init__(self, role: str, client: ModelClient, system: str, tools: Sequence[Callable[..., Any]],
                 context: BoundedContext) -> None:
        self.role, self.client, self.system, self.context = role, client, system, context
        self.tools = {t.name: t for t in map(AgentTool, tools)}
        self.pending_note = ""  # what the model must hear about its last answer, sent with the next message
        self.context.fixed_tokens = estimate_text_tokens(system + json.dumps(self.schemas()))
        self.mark_turn_boundary()

    def mark_turn_boundary(self) -> None:
        """Remember the conversation and the replayed model's position between two turns: a save while a turn
        is under way (another agent's step) keeps these, never a tool call without its result."""
        self.saved_context = self.context.snapshot()
        self.saved_position = getattr(getattr(self.client, "inner", self.client), "position", None)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema for t in self.tools.values()]

    async def turn(self, message: str | None, only_tool: str | None = None) -> Turn:
        """Send `message` (if any), get the model's answer, run its tool calls in order. With `only_tool`,
        the model must call that tool (a final report)."""
        try:
            return await self._turn(message, only_tool)
        finally:
            self.mark_turn_boundary()

    async def _turn(self, message: str | None, only_tool: str | None) -> Turn:
        note, self.pending_note = self.pending_note, ""
        message = "\n\n".join(filter(None, [note, message]))
        if message:
            self.context.add(Message("user", message))
        try:
            result, truncations = await self._ask(only_tool)
        except BaseException:  # an outage, an API error, a cut at the phase end: the message was never answered
            if message:
                self.context.drop_unanswered()
            self.pending_note = note
            raise
        turn = Turn(self.role, usage=result.usage, retried_truncation=truncations)
        if not result.calls:
            turn.text = result.text
            turn.cut = result.finish_reason == "length"
            # A cut answer is not kept whole: resending it would only invite more of the same.
            kept = (result.text[:CUT_KEPT_CHARS].strip() + " [cut]") if turn.cut else result.text
            self.context.add(Message("assistant", kept or "(no text)"))
            if calls := find_text_calls(result.text, self.tools):
                turn.text_calls, self.pending_note = len(calls), not_run_note(calls)
            elif turn.cut:
                self.pending_note = CUT_TEXT_NOTE.format(tokens=turn.usage.output)
            return turn
        turn.text = result.text
        turn.calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.calls]
        self.context.add(Message("assistant", turn.text, calls=turn.calls))
        try:
            for call in turn.calls:
                turn.results.append(await self._run(call, turn, only_tool))
        finally:  # cancelled at a phase end, or a bug: the calls not run still get a result
            for call in turn.calls[len(turn.results):]:
                turn.results.append(_result(call, "Not run: the turn was interrupted (the budget phase ended).",
                                            error=True))
            self.context.add(Message("tool", results=turn.results))
        return turn

    async def _ask(self, only_tool: str | None) -> tuple[Answer, int]:
        """One model call; an answer cut off at max_tokens inside a tool call is asked again with a note and a
        higher limit, never run."""
        tools = [t.spec for t in self.tools.values()]
        choice = only_tool or "auto"
        extra: dict[str, Any] = {}
        note: list[ChatMessage] = []
        for attempt in range(MAX_TOKENS_RETRIES + 1):
            sent = self.context.estimate()
            result = await self.client.create([ChatMessage("system", self.system), *self._chat_messages(), *note],
                                              tools=tools, tool_choice=choice, extra=extra)
            self.context.calibrate(result.usage.prompt_tokens, sent)
            if not (result.finish_reason == "length" and result.calls):
                return result, attempt
            log.warning("%s: answer cut off at max_tokens inside a tool call; asking again", self.role)
            note = [ChatMessage("user", TRUNCATED_NOTE)]
            extra = raised_output_limit(self.client, attempt + 1)
        raise RuntimeError(f"the {self.role}'s model was cut off at its output limit {MAX_TOKENS_RETRIES + 1} times")

    async def _run(self, call: dict[str, Any], turn: Turn, only_tool: str | None) -> dict[str, Any]:
        tool = self.tools.get(call["name"])
        if only_tool and call["name"] != only_tool:
            return _result(call, f"Error: only {only_tool} may be called now.", error=True)
        if tool is None:
            return _result(call, f"Error: unknown tool '{call['name']}'. Tools: {', '.join(self.tools)}", error=True)
        try:
            arguments = json.loads(call["arguments"] or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments must be a JSON object")
        except ValueError as err:
            return _result(call, f"Error: the arguments of {call['name']} are not valid JSON ({err}).", error=True)
        try:
            value = await tool.run(arguments, call_id=call["id"])
        except Decision as decision:
            if turn.decisions and not (decision.combines and all(d.combines for d in turn.decisions)):
                return _result(call, f"Error: only one decision per turn; {type(turn.decision).__name__.lower()} "
                                     "was already accepted in this turn. Make this call in a later turn.", error=True)
            turn.decisions.append(decision)
            return _result(call, decision.message)
        except Exception as err:  # noqa: BLE001 - a failing tool is an observation for the model
            return _result(call, f"Error: {type(err).__name__}: {err}", error=True)
        return _result(call, value)

    def _chat_messages(self) -> list[ChatMessage]:
        return [chat_message(m) for m in self.context.messages]


def chat_message(message: Message) -> ChatMessage:
    """A message of the bounded context as the model clients take it."""
    return ChatMessage(message.role, message.text, tuple(ToolCall(**c) for c in message.calls),
                       tuple(ToolResult(**r) for r in message.results))


def raised_output_limit(client: ModelClient, attempt: int) -> dict[str, Any]:
    """The output-token limit for a retry after a cut-off answer, in the client's own parameter."""
    current = getattr(client, "max_tokens", None)
    if current is not None:  # our clients: Anthropic's max_tokens, OpenAI's max_completion_tokens or max_tokens
        return {getattr(client, "output_limit_param", "max_tokens"): min(64_000, current * 2 ** attempt)}
    return {"max_completion_tokens": 16_384 * 2 ** (attempt - 1)}


def _result(call: dict[str, Any], content: str, error: bool = False) -> dict[str, Any]:
    if len(content) > RESULT_CHARS:
        content = content[:RESULT_CHARS] + f"\n[cut at {RESULT_CHARS} characters]"
    return {"call_id": call["id"], "name": call["name"], "content": content or "(no output)", "is_error": error}
