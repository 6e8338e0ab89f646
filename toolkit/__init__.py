"""The worker's tools: bounded commands, background jobs, confined files, arXiv, GitHub, GPU status."""
