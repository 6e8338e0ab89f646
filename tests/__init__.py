"""The test suite is a package, so pytest puts the repository root (not tests/) on sys.path: tests/crew must
not pass for the `crew` package."""
