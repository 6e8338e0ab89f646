"""Terminal output of the command line, and how an error is shown: what is wrong, then the hint."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from challenges.framework.api import ChallengeError
from crew.errors import EXIT_BAD_INPUT, CrewError

# Not a terminal (a pipe, a file, a CI log): there is no width to fit, so tables keep whole names and run ids
# rather than cutting them at Rich's default of 80 columns.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, soft_wrap=True)


def fail(error: CrewError | ChallengeError, code: int = EXIT_BAD_INPUT) -> None:
    """Print the error and its hint to stderr and exit with its code (2, bad input, by default)."""
    err.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
    if error.hint:
        err.print(f"[bold]hint:[/] {escape(error.hint)}", highlight=False)
    raise typer.Exit(getattr(error, "exit_code", code))
