"""The crew's error type: what is wrong, what to do, and the exit code the command line returns."""

from __future__ import annotations

EXIT_DONE, EXIT_NO_SUBMISSION, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 3


class CrewError(Exception):
    def __init__(self, message: str, hint: str = "", exit_code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.message, self.hint, self.exit_code = message, hint, exit_code

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message
