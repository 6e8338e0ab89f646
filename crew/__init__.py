"""The crew: the command line, runs, policies, the step loop and its agents, reports and benches.

Rooms, each importing only those below it:
- `crew.cli`: every command (`run`, `resume`, `status`, `runs`, `report`, `doctor`, `challenges`, `bench`).
- `crew.bench`: grids of runs (challenges x models x seeds) on local or SLURM executors.
- `crew.reporting`: report.md / report.html, the live panel and status, read from the run directory only.
- `crew.policy`: the baseline and the LLM crew, and the runner that starts, resumes and ends a run.
- `crew.loop`: the step loop, its state, tools, prompts, plan and snapshots.
- `crew.agent`: one agent's session, its bounded context, the model clients and the one autogen adapter.
- `crew.run`: the run directory, run.toml, the trace, the ledger, results, the final pick, the clock.
"""
