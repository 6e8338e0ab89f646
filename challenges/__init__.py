"""Challenges: the format, loader, validator, scoring harness, and the built-in challenge folders.

`from challenges import Score, ScoreContext` is all a challenge's own files need.
"""

from challenges.api import ChallengeError, DatasetUnavailable, Score, ScoreContext

__all__ = ["ChallengeError", "DatasetUnavailable", "Score", "ScoreContext"]
