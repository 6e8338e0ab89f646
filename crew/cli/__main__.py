"""`python -m crew.cli`: the same as the `research-crew` command."""

from crew.cli.main import main

main()
