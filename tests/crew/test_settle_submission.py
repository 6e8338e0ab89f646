"""The run's one end (crew/policy/runner.py): what is submitted must be what was scored, and the exit code says
what was submitted. A submission whose frozen copy changed after scoring is withdrawn, and the run then exits 1,
not 0 (the exit code used to be decided before this check)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from challenges.framework.harness import Evaluation
from challenges.framework.loader import load_challenge
from crew.errors import EXIT_DONE, EXIT_NO_SUBMISSION
from crew.policy.runner import _settle_submission, exit_code_of
from crew.run.results import Outcome
from crew.run.rundir import RunDir
from crew.run.trace import Trace
from tests.foundation.helpers import write_challenge


class _Recipe:
    """Only what the runner's end reads of a policy: the protocol's data, no run."""

    picks_final = False


def _scored(run: RunDir, content: bytes) -> Evaluation:
    frozen = run.evaluations / "eval-0001.frozen" / "answer.txt"
    frozen.parent.mkdir(parents=True)
    frozen.write_bytes(content)
    record = Evaluation(id="eval-0001", challenge="toy", preset="smoke", artifact="answer.txt",
                        sha256=hashlib.sha256(content).hexdigest(), ok=True, score=0.5,
                        metric={"name": "value", "direction": "max"}, frozen=str(frozen), full_score=0.5)
    (run.evaluations / "eval-0001.json").write_text(json.dumps(asdict(record)))
    return record


def test_a_submission_changed_after_scoring_is_withdrawn_and_the_run_exits_1(tmp_path):
    challenge = load_challenge(write_challenge(tmp_path / "challenges", "toy"))
    run = RunDir.create("toy", tmp_path / "run")
    record = _scored(run, b"0.5\n")
    intact = Outcome("submitted", submission=record)
    _settle_submission(_Recipe(), intact, run, challenge, Trace(run.trace))
    assert intact.submission is not None and exit_code_of(intact) == EXIT_DONE

    (run.evaluations / "eval-0001.frozen" / "answer.txt").write_bytes(b"0.99\n")  # changed after scoring
    changed = Outcome("submitted", submission=record)
    _settle_submission(_Recipe(), changed, run, challenge, Trace(run.trace))
    assert changed.submission is None and changed.status == "no_submission"
    assert "no longer matches" in changed.note and exit_code_of(changed) == EXIT_NO_SUBMISSION
