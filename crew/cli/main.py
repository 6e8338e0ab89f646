"""The `research-crew` command line."""

from __future__ import annotations

import typer

from crew.cli import doctor as cli_doctor
from crew.cli import ops as cli_ops
from crew.cli import run as cli_run
from crew.cli.challenges import challenges_app

app = typer.Typer(help="Unattended ML research inside a hard time budget.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
cli_run.register(app)
cli_ops.register(app)
cli_doctor.register(app)
app.add_typer(challenges_app, name="challenges")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
