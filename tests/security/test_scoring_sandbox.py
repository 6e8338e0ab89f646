"""The scorer's own sandbox, seen from inside a scorer: no capabilities, no keys, no network, nothing of the run
but what scoring reads, the challenge and the data read-only, a fresh scratch, and the tools scorers run (a
Lean stand-in on PATH) still there. A scorer whose exception quotes private data gets that text into the record,
never into what the agent is told."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from challenges.framework.api import ScoreContext
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from challenges.framework.score_sandbox import bwrap_works
from crew.run.ledger import agent_reason
from tests.foundation.helpers import write_challenge

pytestmark = pytest.mark.skipif(not bwrap_works(), reason="needs a working bubblewrap")

PROBE = """\
    import json, os, socket, subprocess
    from pathlib import Path
    from challenges import Score

    def _tried(action):
        try:
            action()
            return "allowed"
        except Exception as err:
            return type(err).__name__

    def score(submission, ctx):
        if (ctx.private_dir / "answer.txt").read_text().strip() != "0.42":
            raise RuntimeError("private data not readable")
        if submission.read_text() == "raise":
            raise ValueError("the answer was " + (ctx.private_dir / "answer.txt").read_text().strip())
        seen = {
            "caps": [l for l in open("/proc/self/status") if l.startswith("CapEff")][0].split()[1],
            "env": sorted(os.environ),
            "write_challenge": _tried(lambda: (ctx.challenge_dir / "x").write_text("x")),
            "write_private": _tried(lambda: (ctx.private_dir / "x").write_text("x")),
            "scratch": _tried(lambda: (ctx.scratch_dir / "x").write_text("x")),
            "run_state": os.path.exists(os.environ.get("PROBE_RUN", "/nonexistent")),
            "home": os.path.expanduser("~"),
            "connect": _tried(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2)),
            "lean": subprocess.run(["lean", "--version"], capture_output=True, text=True).stdout.strip(),
        }
        (ctx.scratch_dir / "seen.json").write_text(json.dumps(seen))
        return Score(1.0 - abs(float(submission.read_text()) - 0.42))
    """


def test_a_scorer_sees_only_what_scoring_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    folder = write_challenge(tmp_path / "challenges", "probe",
                             scorer=PROBE.replace("PORT", str(listener.getsockname()[1])))
    lean_bin = tmp_path / "lean-toolchain" / "bin"
    lean_bin.mkdir(parents=True)
    (lean_bin / "lean").write_text("#!/bin/sh\necho 'Lean (version 4.15.0, stand-in)'\n")
    (lean_bin / "lean").chmod(0o755 | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{lean_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SCORER-CANARY")
    monkeypatch.setenv("CREW_STARTUP_NOTE", "scorer-canary")
    run = tmp_path / "run"
    monkeypatch.setenv("PROBE_RUN", str(run / "state"))  # not passed on: the probe falls back to a nonexistent path
    (run / "state").mkdir(parents=True)
    data, private = tmp_path / "data", tmp_path / "private"
    for folder_ in (data, private):
        folder_.mkdir()
    (private / "answer.txt").write_text("0.42\n")
    (run / "answer.txt").write_text("0.5")
    ctx = ScoreContext(challenge="probe", preset="smoke", data_dir=data, private_dir=private,
                       scratch_dir=run / "scratch")
    try:
        record = evaluate(load_challenge(folder), run / "answer.txt", ctx, run / "evaluations")
    finally:
        listener.close()
    assert record.ok and record.sandboxed and record.score == pytest.approx(0.92), record.error
    seen = json.loads((run / "scratch" / record.id / "seen.json").read_text())
    assert seen["caps"] == "0000000000000000"
    assert not any("KEY" in name or name == "CREW_STARTUP_NOTE" or name.startswith("PROBE") for name in seen["env"])
    assert seen["write_challenge"] == seen["write_private"] == "OSError" and seen["scratch"] == "allowed"
    assert seen["run_state"] is False and seen["connect"] != "allowed"
    assert seen["home"] == str(run / "scratch" / record.id)  # its HOME is its fresh scratch
    assert seen["lean"] == "Lean (version 4.15.0, stand-in)"  # the tools scorers run are inside too
    assert not (folder / "x").exists() and not (private / "x").exists()

    (run / "answer.txt").write_text("raise")
    failed = evaluate(load_challenge(folder), run / "answer.txt", ctx, run / "evaluations")
    assert "0.42" in failed.error  # the record keeps the scorer's own text, for the user
    told = agent_reason(failed)
    assert "0.42" not in told and "ValueError" in told and str(tmp_path) not in told, told


def test_the_run_s_requirements_folder_reaches_the_sandboxed_scorer_and_its_children(tmp_path, monkeypatch) -> None:
    """`run --install-requirements` puts a challenge's requirements in a folder of the run's own; the scorer
    runs under `python -I` (PYTHONPATH ignored), so the folder is shown and put first on its path by name."""
    requirements = tmp_path / "envs" / "abc"
    requirements.mkdir(parents=True)
    (requirements / "only_in_requirements.py").write_text("VALUE = 0.25\n")
    folder = write_challenge(tmp_path / "challenges", "needs", scorer="""\
        import subprocess, sys
        from challenges import Score
        import only_in_requirements

        def score(submission, ctx):  # a child Python (a timing scorer's run) must find it too
            child = subprocess.run([sys.executable, "-c", "import only_in_requirements as m; print(m.VALUE)"],
                                   capture_output=True, text=True, check=True)
            return Score(only_in_requirements.VALUE + float(child.stdout))
        """)
    monkeypatch.setenv("RESEARCH_CREW_REQUIREMENTS", str(requirements))
    (tmp_path / "answer.txt").write_text("1")
    ctx = ScoreContext(challenge="needs", preset="smoke", data_dir=tmp_path, private_dir=tmp_path / "private",
                       scratch_dir=tmp_path / "scratch")
    (tmp_path / "private").mkdir()
    record = evaluate(load_challenge(folder), tmp_path / "answer.txt", ctx, tmp_path / "evaluations")
    assert record.ok and record.sandboxed and record.score == pytest.approx(0.5), record.error
