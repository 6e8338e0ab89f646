"""A run's records: the run directory, run.toml, the trace, the ledger, results, the final pick, the clock."""
