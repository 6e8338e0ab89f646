"""Request validation as the real model APIs do it, with their status, error type and wording.

`anthropic_request_errors` checks a POST /v1/messages body, `openai_request_errors` a POST
/v1/chat/completions body; each returns every problem found (the services answer with the first).
The test server in tests/apiserver answers with them and the `replay:` client applies them, so a
conversation the real services would reject fails in tests too.

The messages are copied from real 400 answers quoted in public bug reports, except those marked
"assumed wording" (the rule is documented; its exact text we could not find).
Pure functions on plain JSON data: no autogen, no SDK, no I/O.
"""

from crew.agent.models.protocol.chat_completions import openai_request_errors
from crew.agent.models.protocol.errors import ProtocolError, ProtocolViolation, anthropic_error_body, openai_error_body
from crew.agent.models.protocol.messages_api import anthropic_request_errors, cache_breakpoints


def check_anthropic_request(body: object) -> None:
    """Raise ProtocolViolation if the Anthropic Messages API would refuse this request body."""
    if errors := anthropic_request_errors(body):
        raise ProtocolViolation("Anthropic Messages", errors)


def check_openai_request(body: object) -> None:
    """Raise ProtocolViolation if the OpenAI Chat Completions API would refuse this request body."""
    if errors := openai_request_errors(body):
        raise ProtocolViolation("OpenAI Chat Completions", errors)


__all__ = [
    "ProtocolError",
    "ProtocolViolation",
    "anthropic_error_body",
    "anthropic_request_errors",
    "cache_breakpoints",
    "check_anthropic_request",
    "check_openai_request",
    "openai_error_body",
    "openai_request_errors",
]
