"""One agent: its session, its bounded context, the model clients (plain types) and the one autogen adapter."""
