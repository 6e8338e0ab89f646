"""Runs inside the harness's subprocess: load the scorer, run check then score, write the result file.

Usage: python -m challenges.framework._score_runner CHALLENGE_DIR ARTIFACT CTX_JSON RESULT_JSON
The result travels in its own file so that whatever the scorer prints cannot corrupt it.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from challenges.framework.api import Score, ScoreContext
from challenges.framework.loader import load_module
from checkpoints.atomic import atomic_write_json

# Before any scorer imports torch: on a shared CPU, idle OpenMP threads yield instead of spinning (spinning
# slowed small-model scoring by two orders of magnitude on a busy 2-core machine).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(challenge_dir: str, artifact: str, ctx_file: str, result_file: str) -> int:
    result: dict = {}
    try:
        ctx = ScoreContext.from_json(Path(ctx_file).read_text(encoding="utf-8"))
        scorer = load_module(Path(challenge_dir) / "scorer.py")
        check = getattr(scorer, "check", None)
        violations = [str(v) for v in check(Path(artifact), ctx)] if check else []
        if violations:
            result["violations"] = violations
        else:
            score = scorer.score(Path(artifact), ctx)
            if not isinstance(score, Score):
                raise TypeError(f"score() must return challenges.Score, got {type(score).__name__}")
            result.update(score=float(score.value), details=score.details)
            if score.items:
                result["items"] = {str(group): {str(k): float(v) for k, v in values.items()}
                                   for group, values in score.items.items()}
    except BaseException as err:  # the scorer's fault is the record's content, not ours to re-raise
        traceback.print_exc()
        result["error"] = f"scorer raised {type(err).__name__}: {err}"
    atomic_write_json(Path(result_file), result)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
