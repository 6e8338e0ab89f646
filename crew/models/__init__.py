"""Model clients behind the specs of DESIGN.md: Anthropic, OpenAI(-compatible), retries, usage and prices."""
