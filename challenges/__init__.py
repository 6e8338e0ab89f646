"""Challenges, in three parts.

- The framework (`challenges.framework`): the format (api, spec), the loader and validator, the data
  cache, the scoring harness and the scaffold of `challenges new`.
- The authoring library (`challenges.lib`): helpers for challenge writers.
- One folder per built-in challenge.

`from challenges import Score, ScoreContext` is all a challenge's own files need.
"""

from challenges.framework.api import ChallengeError, DatasetUnavailable, EnvironmentCheck, Score, ScoreContext

__all__ = ["ChallengeError", "DatasetUnavailable", "EnvironmentCheck", "Score", "ScoreContext"]
