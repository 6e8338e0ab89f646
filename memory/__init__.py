"""Hypothesis records, vector search and the research log, shared across runs."""
