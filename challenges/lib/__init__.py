"""The authoring library: helpers that challenge writers import (hub loading, lm-eval scoring, model checks,
fine-tuning loops, tokens, tiny stand-in models...). The framework (format, loader, harness, data cache) does
not depend on it; the built-in challenges show how it is used."""
