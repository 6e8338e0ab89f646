"""The one error type of the memory package."""


class MemoryStoreError(Exception):
    """Something in the memory store went wrong; `hint` says what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message
