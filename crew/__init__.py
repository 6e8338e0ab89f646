"""The crew: command line, run configuration, policies, and reports. Only this package imports autogen."""
