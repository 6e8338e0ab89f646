"""A refused request: its reasons, and the error bodies each service sends for them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProtocolError:
    """One reason a real service would refuse the request (HTTP 400 unless `status` says otherwise)."""

    message: str
    param: str | None = None  # OpenAI's error.param
    code: str | None = None  # OpenAI's error.code
    status: int = 400
    type: str = "invalid_request_error"


class ProtocolViolation(Exception):
    """A request the real service would refuse; `errors` holds every reason, the message the first."""

    def __init__(self, api: str, errors: list[ProtocolError]) -> None:
        super().__init__(f"the {api} API would answer {errors[0].status}: {errors[0].message}")
        self.api, self.errors = api, errors


def anthropic_error_body(error: ProtocolError, request_id: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"type": "error", "error": {"type": error.type, "message": error.message}}
    if request_id:
        body["request_id"] = request_id
    return body


def openai_error_body(error: ProtocolError) -> dict[str, Any]:
    return {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
