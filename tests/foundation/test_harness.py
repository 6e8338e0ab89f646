"""The scoring harness: good, crashing, hanging, flooding and rule-breaking scorers, each a recorded outcome."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import psutil
import pytest

from challenges.framework.api import ScoreContext
from challenges.framework.harness import LOG_HEAD_BYTES, LOG_TAIL_BYTES, artifact_sha256, evaluate, load_evaluations
from challenges.framework.loader import load_challenge
from tests.foundation.helpers import write_challenge


@pytest.fixture
def setup(tmp_path):
    def make(scorer: str = ""):
        challenge = load_challenge(write_challenge(tmp_path / "challenges", scorer=scorer))
        artifact = tmp_path / "answer.txt"
        artifact.write_text("0.75")
        ctx = ScoreContext(challenge="toy", preset="smoke", data_dir=tmp_path / "data",
                           private_dir=tmp_path / "private", scratch_dir=tmp_path / "scratch", time_limit_s=60)
        return challenge, artifact, ctx, tmp_path / "evaluations"
    return make


def test_good_scorer_writes_a_complete_record(setup):
    challenge, artifact, ctx, evals = setup()
    record = evaluate(challenge, artifact, ctx, evals)
    assert record.ok and record.score == 0.75 and record.details == {"source": "file"}
    saved = json.loads((evals / f"{record.id}.json").read_text())
    for key in ("artifact", "sha256", "score", "details", "log", "duration_s"):
        assert key in saved
    assert saved["sha256"] == artifact_sha256(artifact) and saved["duration_s"] > 0
    assert [r.id for r in load_evaluations(evals)] == [record.id]


def test_crashing_scorer_is_a_recorded_failure(setup):
    challenge, artifact, ctx, evals = setup("""\
        def score(submission, ctx):
            raise RuntimeError("model folder is broken")
        """)
    record = evaluate(challenge, artifact, ctx, evals)
    assert not record.ok and record.score is None
    assert "RuntimeError: model folder is broken" in record.error
    assert "Traceback" in open(record.log).read()
    assert (evals / f"{record.id}.json").is_file()


def test_scorer_killed_by_a_signal_is_a_recorded_failure(setup):
    challenge, artifact, ctx, evals = setup("""\
        import os, signal
        def score(submission, ctx):
            os.kill(os.getpid(), signal.SIGKILL)
        """)
    record = evaluate(challenge, artifact, ctx, evals)
    assert not record.ok and "without a result" in record.error


def test_hanging_scorer_and_its_children_are_stopped_at_the_timeout(setup, tmp_path):
    marker = f"hanging_child_{tmp_path.name}"  # the scorer's own pid namespace hides its pids; its command line shows
    challenge, artifact, ctx, evals = setup(f"""\
        import subprocess, sys, time
        def score(submission, ctx):
            subprocess.Popen([sys.executable, "-c", "import signal, time; {marker} = 1; "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
            time.sleep(600)
        """)
    started = time.monotonic()
    record = evaluate(challenge, artifact, ctx, evals, timeout_s=15)  # time for the scorer to start on a busy machine
    assert time.monotonic() - started < 120  # not the scorer's 600 s
    assert record.timed_out and not record.ok and "time limit" in record.error
    left = [p for p in psutil.process_iter(["cmdline", "status"])
            if marker in " ".join(p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE]
    assert not left


def test_a_partial_score_survives_the_time_limit(setup):
    challenge, artifact, ctx, evals = setup("""\
        import time
        from challenges import Score

        def score(submission, ctx):
            ctx.report_partial(Score(0.5, {"bleu": 12.0, "compile_rate": "not checked: stopped"}))
            time.sleep(600)  # the slow part (compiling every item) never finishes
        """)
    record = evaluate(challenge, artifact, ctx, evals, timeout_s=15)  # time for the scorer to start on a busy machine
    assert record.ok and record.score == 0.5 and record.timed_out and record.error == ""
    assert record.details["bleu"] == 12.0 and "time limit of 15s" in record.details["partial"]
    assert json.loads((evals / f"{record.id}.json").read_text())["score"] == 0.5


def test_a_finished_scorer_replaces_its_partial_score_and_a_crash_discards_it(setup):
    challenge, artifact, ctx, evals = setup("""\
        from challenges import Score

        def score(submission, ctx):
            ctx.report_partial(Score(0.5))
            if ctx.preset == "smoke":
                return Score(0.9, {"complete": True})
            raise RuntimeError("compiler crashed")
        """)
    finished = evaluate(challenge, artifact, ctx, evals)
    assert finished.ok and finished.score == 0.9 and "partial" not in finished.details
    crashed = evaluate(challenge, artifact, replace(ctx, preset="full"), evals)
    assert not crashed.ok and "compiler crashed" in crashed.error  # an explicit failure is not rescued


def test_flooding_scorer_keeps_a_capped_log_and_its_score(setup):
    challenge, artifact, ctx, evals = setup("""\
        import sys
        from challenges import Score
        def score(submission, ctx):
            line = "x" * 1023 + "\\n"
            for _ in range(40 * 1024):  # 40 MB
                sys.stdout.write(line)
            print("LAST LINE")
            return Score(0.5)
        """)
    record = evaluate(challenge, artifact, ctx, evals)
    assert record.ok and record.score == 0.5
    log_size = os.path.getsize(record.log)
    assert log_size < LOG_HEAD_BYTES + LOG_TAIL_BYTES * 2 + 1024
    text = open(record.log).read()
    assert "bytes of scorer output cut" in text and text.rstrip().endswith("LAST LINE")


def test_rule_violations_fail_the_artifact_without_scoring(setup, tmp_path):
    challenge, artifact, ctx, evals = setup(f"""\
        from challenges import Score
        def check(submission, ctx):
            return ["uses pretrained weights"]
        def score(submission, ctx):
            open({str(tmp_path / 'scored')!r}, "w").write("yes")
            return Score(1.0)
        """)
    record = evaluate(challenge, artifact, ctx, evals)
    assert not record.ok and record.violations == ["uses pretrained weights"]
    assert not (tmp_path / "scored").exists()


@pytest.mark.parametrize("body", ["return Score(float('nan'))", "return 0.9"])
def test_non_finite_or_untyped_scores_are_failures(setup, body):
    challenge, artifact, ctx, evals = setup(f"""\
        from challenges import Score
        def score(submission, ctx):
            {body}
        """)
    record = evaluate(challenge, artifact, ctx, evals)
    assert not record.ok and record.score is None and record.error


def test_missing_artifact_is_recorded(setup, tmp_path):
    challenge, _, ctx, evals = setup()
    record = evaluate(challenge, tmp_path / "nothing-here", ctx, evals)
    assert not record.ok and "does not exist" in record.error


def test_folder_hash_depends_on_names_and_contents(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    (a / "w.bin").write_bytes(b"123")
    first = artifact_sha256(a)
    (a / "w.bin").write_bytes(b"124")
    second = artifact_sha256(a)
    assert second != first
    (a / "w.bin").rename(a / "v.bin")
    assert artifact_sha256(a) != second
