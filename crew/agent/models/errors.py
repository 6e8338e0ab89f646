"""Errors of the model clients: each carries a message, a hint and the exit code the CLI returns."""

from __future__ import annotations

from crew.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, CrewError


class ModelError(CrewError):
    """A model client that cannot be built or used as configured (bad spec, missing key): bad input."""

    def __init__(self, message: str, hint: str = "", exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message, hint, exit_code)


class ModelOutage(ModelError):
    """The model API stayed unavailable through every retry; the run stops interrupted and resumable."""

    def __init__(self, message: str, hint: str = "", last_error: BaseException | None = None) -> None:
        super().__init__(message, hint or "the API is down or rate-limited; resume the run later", EXIT_INTERRUPTED)
        self.last_error = last_error


class ModelExhausted(Exception):
    """The model has no more answers (a scripted model at the end of its script): the agent's work ends there."""
