"""The Anthropic Messages API's request rules (POST /v1/messages)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from crew.agent.models.protocol.errors import ProtocolError

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_CACHE_BREAKPOINTS = 4
# Claude models from 4.6 on refuse a final assistant message (prefill).
PREFILL_REMOVED_FROM = (4, 6)
THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

Block = dict[str, Any]


def anthropic_request_errors(body: Any) -> list[ProtocolError]:
    if not isinstance(body, dict):
        return [ProtocolError("The request body is not valid JSON: expected an object")]  # assumed wording
    messages = body.get("messages")
    found = [*_required_fields(body), *_sampling(body), *_tools(body)]
    if isinstance(messages, list) and messages:
        found += _messages(messages, body)
    found += _cache_control(body)
    return [ProtocolError(message) for message in found]


def _required_fields(body: dict[str, Any]) -> Iterator[str]:
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            yield f"{name}: Field required"
    if "model" in body and not isinstance(body["model"], str):
        yield "model: Input should be a valid string"  # assumed wording (the API's pydantic form)
    max_tokens = body.get("max_tokens")
    if "max_tokens" in body and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)):
        yield "max_tokens: Input should be a valid integer"  # assumed wording
    elif isinstance(max_tokens, int) and max_tokens < 1:
        yield "max_tokens: Input should be greater than or equal to 1"  # assumed wording
    messages = body.get("messages")
    if "messages" in body and not isinstance(messages, list):
        yield "messages: Input should be a valid list"  # assumed wording
    elif messages == []:
        yield "messages: at least one message is required"


def _sampling(body: dict[str, Any]) -> Iterator[str]:
    if body.get("temperature") is not None and body.get("top_p") is not None:
        yield "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
    temperature = body.get("temperature")
    if isinstance(temperature, int | float) and not 0 <= temperature <= 1:
        yield "temperature: Input should be less than or equal to 1"  # assumed wording
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            yield "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"  # assumed wording
        elif isinstance(body.get("max_tokens"), int) and body["max_tokens"] <= budget:
            yield ("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
                   f"{THINKING_DOCS}#max-tokens-and-context-window-size")


def _tools(body: dict[str, Any]) -> Iterator[str]:
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        yield "tools: Input should be a valid list"  # assumed wording
        tools = None
    names = []
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            yield f"tools.{i}: Input should be a valid dictionary"  # assumed wording
            continue
        if tool.get("type", "custom") != "custom":
            continue  # server tools (web_search_..., bash_...) have fixed schemas of their own
        names.append(tool.get("name"))
        yield from _tool_definition(f"tools.{i}.custom", tool)
    if len(names) != len(set(map(str, names))):
        yield "tools: Tool names must be unique."
    yield from _tool_choice(body.get("tool_choice"), names)


def _tool_definition(where: str, tool: Block) -> Iterator[str]:
    name = tool.get("name")
    if not isinstance(name, str):
        yield f"{where}.name: Field required"
    elif len(name) > 128:
        yield f"{where}.name: String should have at most 128 characters"
    elif not TOOL_NAME.match(name):
        yield f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
    schema = tool.get("input_schema")
    if schema is None:
        yield f"{where}.input_schema: Field required"
    elif not isinstance(schema, dict) or schema.get("type") != "object":
        yield f"{where}.input_schema.type: Input should be 'object'"  # assumed wording
    elif any(key in schema for key in ("oneOf", "allOf", "anyOf")):
        yield f"{where}.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"


def _tool_choice(choice: Any, names: list[Any]) -> Iterator[str]:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        yield ("tool_choice: Input tag found using 'type' does not match any of the expected tags: 'auto', 'any', "
               "'tool', 'none'")  # assumed wording
    elif kind in ("any", "tool") and not names:
        yield "tool_choice: tool_choice may only be specified while providing tools."  # assumed wording
    elif kind == "tool" and choice.get("name") not in names:
        yield f"tool_choice.name: Tool '{choice.get('name')}' not found in the provided tools"  # assumed wording


@dataclass
class _Turn:
    """Consecutive messages of one role: the API merges them into one turn."""

    role: str
    first: int  # index in `messages` of the turn's first message
    blocks: list[tuple[int, int, Block]] = field(default_factory=list)  # (message index, block index, block)

    def kinds(self) -> list[Any]:
        return [b.get("type") for _, _, b in self.blocks]


def _content_blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _messages(messages: list[Any], body: dict[str, Any]) -> list[str]:
    found: list[str] = []
    turns: list[_Turn] = []
    last = len(messages) - 1
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            found.append(f"messages.{i}: Input should be a valid dictionary")  # assumed wording
            continue
        role = msg.get("role")
        if role not in ("user", "assistant"):
            found.append(f"messages.{i}.role: Input should be 'user' or 'assistant'")  # assumed wording
            continue
        blocks = _content_blocks(msg.get("content"))
        final_assistant = i == last and role == "assistant"
        if not blocks and not final_assistant:
            found.append(f"messages.{i}: all messages must have non-empty content except for the optional final "
                         "assistant message")
        found += _text_blocks(blocks, final_assistant)
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role, i))
        turns[-1].blocks += [(i, j, b) for j, b in enumerate(blocks)]
    found += _tool_use_ids(turns)
    found += _tool_pairing(turns)
    if turns and turns[-1].role == "assistant" and _prefill_removed(str(body.get("model", ""))):
        found.append("This model does not support assistant message prefill. The conversation must end with a user "
                     "message.")
    found += _thinking_blocks(turns, body)
    return found


def _text_blocks(blocks: list[Block], final_assistant: bool) -> Iterator[str]:
    texts = [b.get("text") for b in blocks if b.get("type") == "text"]
    for b in blocks:  # text inside tool results is held to the same rule
        if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
            texts += [c.get("text") for c in b["content"] if isinstance(c, dict) and c.get("type") == "text"]
    if any(t == "" for t in texts):
        yield "messages: text content blocks must be non-empty"
    elif any(isinstance(t, str) and not t.strip() for t in texts):
        yield "messages: text content blocks must contain non-whitespace text"
    if final_assistant and blocks and blocks[-1].get("type") == "text":
        text = blocks[-1].get("text")
        if isinstance(text, str) and text.strip() and text != text.rstrip():
            yield "messages: final assistant content cannot end with trailing whitespace"


def _tool_use_ids(turns: list[_Turn]) -> Iterator[str]:
    seen: set[str] = set()
    for turn in turns:
        for i, j, block in turn.blocks:
            if block.get("type") != "tool_use":
                continue
            use_id = block.get("id")
            if not isinstance(use_id, str) or not TOOL_USE_ID.match(use_id):
                yield f"messages.{i}.content.{j}.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
            elif use_id in seen:
                yield f"messages.{i}.content.{j}: `tool_use` ids must be unique"
            seen.add(str(use_id))


def _tool_pairing(turns: list[_Turn]) -> Iterator[str]:
    """Each tool_use is answered by a tool_result that opens the next turn; no result without its use."""
    uses: list[Any] = []  # the tool_use ids of the turn before
    for t, turn in enumerate(turns):
        if turn.role == "assistant":
            uses = [b.get("id") for _, _, b in turn.blocks if b.get("type") == "tool_use"]
            continue
        results = [(i, j, b.get("tool_use_id")) for i, j, b in turn.blocks if b.get("type") == "tool_result"]
        if uses:
            yield from _answered(turns[t - 1], turn, [r for _, _, r in results])
        for i, j, result_id in results:
            if result_id not in uses:
                yield (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                       f"{result_id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                       "previous message.")
        uses = []


def _answered(assistant: _Turn, user: _Turn, result_ids: list[Any]) -> Iterator[str]:
    kinds = assistant.kinds()
    # Only the tool_use blocks that end the assistant's turn are "immediately" followed by the next turn.
    trailing = len(kinds)
    while trailing > 0 and kinds[trailing - 1] == "tool_use":
        trailing -= 1
    uses = [b.get("id") for _, _, b in assistant.blocks if b.get("type") == "tool_use"]
    ending = [b.get("id") for _, _, b in assistant.blocks[trailing:]]
    missing = [str(u) for u in uses if u not in ending or u not in result_ids]
    if missing:
        yield (f"messages.{user.first}: `tool_use` ids were found without `tool_result` blocks immediately after: "
               f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in the "
               "next message.")
        return
    leading_ids = []
    for _, _, block in user.blocks:
        if block.get("type") != "tool_result":
            break
        leading_ids.append(block.get("tool_use_id"))
    if any(u not in leading_ids for u in ending):
        yield (f"messages.{user.first}: Did not find {len(ending)} `tool_result` block(s) at the beginning of this "
               "message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` "
               "blocks.")


def _prefill_removed(model: str) -> bool:
    match = re.search(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:\D|$)", model)
    if not match:
        return False
    return (int(match.group(1)), int(match.group(2) or 0)) >= PREFILL_REMOVED_FROM


def _thinking_blocks(turns: list[_Turn], body: dict[str, Any]) -> Iterator[str]:
    assistants = [t for t in turns if t.role == "assistant" and t.blocks]
    if not assistants:
        return
    final = assistants[-1]
    i, j, first = final.blocks[0]
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive"):
        if turns[-1] is final and any(k in ("thinking", "redacted_thinking") for k in final.kinds()):
            yield (f"messages.{i}.content.{j}: When thinking is disabled, an `assistant` message in the final "
                   "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.")
        return
    in_tool_loop = "tool_use" in final.kinds() and turns[-1] is not final
    if in_tool_loop and first.get("type") not in ("thinking", "redacted_thinking"):
        yield (f"messages.{i}.content.{j}.type: Expected `thinking` or `redacted_thinking`, but found "
               f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start with a "
               "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
               "you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "
               f"Please consult our documentation at {THINKING_DOCS}")


def cache_breakpoints(body: dict[str, Any]) -> list[tuple[str, Block]]:
    """(path, block) of every block with cache_control, in the order the API processes them."""
    found: list[tuple[str, Block]] = []
    system = body.get("system")
    places = [("tools", body.get("tools")), ("system", system if isinstance(system, list) else None)]
    for name, blocks in places:
        found += [(f"{name}.{i}", b) for i, b in enumerate(blocks or [])
                  if isinstance(b, dict) and b.get("cache_control")]
    for i, msg in enumerate(body.get("messages") or []):
        content = msg.get("content") if isinstance(msg, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            if block.get("cache_control"):
                found.append((f"messages.{i}.content.{j}", block))
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for k, inner in enumerate(nested if isinstance(nested, list) else []):
                if isinstance(inner, dict) and inner.get("cache_control"):
                    found.append((f"messages.{i}.content.{j}.content.{k}", inner))
    return found


def _cache_control(body: dict[str, Any]) -> Iterator[str]:
    marks = cache_breakpoints(body)
    if len(marks) > MAX_CACHE_BREAKPOINTS:
        yield f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
    seen_short = False
    for path, block in marks:
        control = block["cache_control"]
        ttl = control.get("ttl", "5m") if isinstance(control, dict) else None
        if ttl not in ("5m", "1h"):
            yield f"{path}.cache_control.ttl: Input should be '5m' or '1h'"  # assumed wording
        elif ttl == "1h" and seen_short:
            yield (f"{path}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' "
                   "cache_control block. Note that blocks are processed in the following order: `tools`, `system`, "
                   "`messages`.")
        seen_short = seen_short or ttl == "5m"
