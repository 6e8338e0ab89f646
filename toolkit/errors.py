"""The toolkit's one error type, for programmer errors (bad arguments to the API, not tool failures)."""

from __future__ import annotations


class ToolkitError(Exception):
    """A misuse of the toolkit API. Tool-call failures are returned as text observations instead."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message
