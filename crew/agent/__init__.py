"""One agent: its session (the adapter to autogen's AssistantAgent), its bounded context, the model clients."""
