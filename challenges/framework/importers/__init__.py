"""Importers of peer benchmark suites: each writes research-crew challenge folders from a suite's own files."""
