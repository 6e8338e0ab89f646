"""What a person sees of a run: its snapshot (read from the run directory only), the live panel,
`status`, `runs`, and the reports (report.md, a self-contained report.html with embedded plots)."""
