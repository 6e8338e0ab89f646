"""Model specs: baseline, anthropic:MODEL, openai:MODEL[@BASE_URL][?tools=text], replay:PATH.

`?tools=text` is for models without working native function calling (many small local ones): the tools are
described in the prompt and the crew parses the calls from the answer's text (crew/agent/models/text_tools.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from crew.errors import CrewError

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-5-5"  # claude-sonnet-4-5 reaches end of life 2026-11-30
DEFAULT_OPENAI_MODEL = "gpt-5.5"
KINDS = ("baseline", "anthropic", "openai", "replay")
FORMS = "baseline, anthropic:MODEL, openai:MODEL, openai:MODEL@BASE_URL[?tools=text] or replay:PATH"
TOOL_MODES = ("native", "text")


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    model: str = ""
    base_url: str = ""
    tools: str = "native"  # "text": tool calls travel as text (crew/agent/models/text_tools.py)

    def __str__(self) -> str:
        if self.kind == "baseline":
            return "baseline"
        return (f"{self.kind}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")
                + ("?tools=text" if self.tools == "text" else ""))


def parse_spec(text: str) -> ModelSpec:
    text = text.strip()
    if text == "baseline":
        return ModelSpec("baseline")
    kind, sep, rest = text.partition(":")
    if not sep or kind not in KINDS or not rest:
        raise CrewError(f"unknown model spec '{text}'", f"use one of: {FORMS}")
    tools = "native"
    if kind in ("openai", "anthropic") and "?" in rest:
        rest, _, query = rest.partition("?")
        tools = query.removeprefix("tools=")
        if not query.startswith("tools=") or tools not in TOOL_MODES:
            raise CrewError(f"model spec '{text}' has an unknown option '?{query}'",
                            "the one option is ?tools=text (tool calls written as text, for models without "
                            "native function calling)")
    if kind == "openai" and "@" in rest:
        model, _, base_url = rest.partition("@")
        if not model or not base_url.startswith(("http://", "https://")):
            raise CrewError(f"model spec '{text}' needs MODEL@http(s)://HOST", "e.g. openai:llama3@http://localhost:8000/v1")
        return ModelSpec(kind, model, base_url, tools)
    return ModelSpec(kind, rest, tools=tools)


def default_spec() -> tuple[ModelSpec, str]:
    """The spec used without --model, and the line that says why (DESIGN: keys come from the environment)."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return ModelSpec("anthropic", DEFAULT_ANTHROPIC_MODEL), "ANTHROPIC_API_KEY is set"
    if os.environ.get("OPENAI_API_KEY"):
        return ModelSpec("openai", DEFAULT_OPENAI_MODEL), "OPENAI_API_KEY is set"
    return ModelSpec("baseline"), "no ANTHROPIC_API_KEY or OPENAI_API_KEY: using the baseline policy (no LLM)"


KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def require_usable(spec: ModelSpec) -> None:
    """Refuse, before anything is made, a spec that cannot work here: an API model without its key in the
    environment (an openai:MODEL@BASE_URL server needs none), or a replay of a script that is missing or unreadable."""
    if spec.kind == "replay":
        from crew.agent.replay import load_script

        load_script(Path(spec.model))  # raises naming the file: missing, or not a script
    variable = KEY_VARIABLES.get(spec.kind)
    if variable and not spec.base_url and not os.environ.get(variable, "").strip():
        raise CrewError(f"model spec '{spec}' needs the environment variable {variable}, which is not set",
                        f"export {variable}=... (keys are read from the environment only), or use --model baseline")
