"""The policies (the baseline recipe, the LLM crew) and the runner that starts, resumes and ends a run."""
