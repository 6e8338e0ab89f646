"""Compiling autoformalized statements: all items in a small pool of Lean processes, errors traced to their items,
items left unchecked (never failed) at the deadline, and the score kept when the harness stops the scorer.

Lean cannot be installed here (its toolchains come from GitHub), so most tests run a stand-in `lean` on PATH:
a script that answers like Lean 4 (`--version`, and `file:line:col: error: ...` for each statement it rejects:
an unknown identifier, as the real one would for `undefined_thing`) and logs each start. The last test runs the
real Lean when one is on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from challenges.framework.api import ScoreContext
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from tests.challenges.builders import challenge_module

LEAN = textwrap.dedent("""\
    #!{python}
    import os, re, sys, time
    if sys.argv[1] == "--version":
        # A file beside the stand-in (the scorer's sandbox passes no test variable) makes it stall, as `lake env
        # lean` does while it rebuilds a project.
        if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stall")):
            time.sleep(600)
        print("Lean (version {version}, x86_64-unknown-linux-gnu, commit 0123456789ab, Release)")
        sys.exit(0)
    path = sys.argv[1]
    with open(os.environ["LEAN_STANDIN_LOG"], "a") as log:
        log.write(f"{{time.monotonic()}} {{path}}\\n")
    text = open(path).read()
    if "slow_item" in text:
        time.sleep(60)
    errors = 0
    for number, line in enumerate(text.splitlines(), start=1):
        column = line.find("undefined_thing")
        if column >= 0:
            print(f"{{path}}:{{number}}:{{column}}: error: unknown identifier 'undefined_thing'")
            errors += 1
        elif "sorry" in line:
            print(f"{{path}}:{{number}}:0: warning: declaration uses 'sorry'")
    sys.exit(1 if errors else 0)
    """)


@pytest.fixture
def lean_on_path(tmp_path, monkeypatch):
    def install(version: str = "4.15.0") -> Path:
        folder = tmp_path / "bin"
        folder.mkdir(exist_ok=True)
        script = folder / "lean"
        script.write_text(LEAN.format(python=sys.executable, version=version))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.delenv("RESEARCH_CREW_LEAN_PROJECT", raising=False)
        monkeypatch.setenv("LEAN_STANDIN_LOG", str(tmp_path / "lean.log"))
        return tmp_path / "lean.log"
    return install


@pytest.fixture(scope="module")
def lean():
    return challenge_module("math_autoformalization", "lean_check.py")


def test_every_item_is_judged_by_its_own_lines_in_a_few_processes(lean, lean_on_path):
    log = lean_on_path()
    good = [f"theorem t{i} (n : Nat) : n + {i} = {i} + n := by omega" for i in range(9)]
    statements = good[:4] + ["theorem bad (n : Nat) : undefined_thing n = n"] + good[4:]
    toolchain = lean.find_toolchain(needs_mathlib=False)
    assert toolchain.version == "4.15.0" and toolchain.supported
    verdicts = lean.compile_items(statements, [""] * len(statements), toolchain, time.monotonic() + 60, pool_size=3)
    assert verdicts == [True] * 4 + [False] + [True] * 5
    assert len(log.read_text().splitlines()) == 3  # three Lean processes for ten items, not ten


def test_items_unfinished_at_the_deadline_are_unchecked_not_failed(lean, lean_on_path):
    lean_on_path()
    statements = ["theorem slow_item : True", "theorem quick : True", "theorem also_quick : True"]
    started = time.monotonic()
    verdicts = lean.compile_items(statements, ["", "", ""], lean.find_toolchain(False), started + 3, pool_size=2)
    assert time.monotonic() - started < 15
    assert verdicts == [None, True, None]  # chunk 0 (items 0 and 2) was stopped; chunk 1 compiled


def test_a_statement_that_would_spill_into_the_next_items_is_refused_unchecked(lean):
    text, ranges = lean.build_file([("theorem a : True /- unclosed", ""), ("theorem b : True", "open Nat"),
                                    ("def sneaky : Nat := 1", "")])
    assert ranges[0] is None and ranges[2] is None and ranges[1] is not None
    first, last = ranges[1]
    block = text.splitlines()[first - 1:last]
    assert block == ["namespace RCItem1", "open Nat", "theorem b : True := by sorry", "end RCItem1"]
    assert lean.failed_items("f.lean:1:0: error: unknown package 'Mathlib'", ranges) is None  # outside every item


def test_imports_are_gathered_once_at_the_top(lean):
    text, _ = lean.build_file([("theorem a : True", "import Mathlib\nopen Fintype"),
                               ("theorem b : True", "import Mathlib\nopen Real")])
    assert text.startswith("import Mathlib\n\nnamespace RCItem0\nopen Fintype\n") and text.count("import") == 1


def test_lean_versions_are_checked_against_proofnets_range(lean):
    assert lean.version_in_range("4.7.0", *lean.LEAN_RANGE) and lean.version_in_range("4.16.0-rc2", *lean.LEAN_RANGE)
    assert not lean.version_in_range("4.16.0", *lean.LEAN_RANGE) and not lean.version_in_range("4.6.1",
                                                                                               *lean.LEAN_RANGE)
    assert lean.version_in_range("4.16.0-rc1", *lean.LEAN_RANGE)


def test_doctor_reports_the_toolchain_and_its_range(lean_on_path):
    scorer = challenge_module("math_autoformalization")
    lean_on_path("4.20.0")
    [check] = scorer.environment_checks("smoke")
    assert check.verdict == "warn" and "outside Lean 4.7.0 to 4.16.0-rc2" in check.detail
    lean_on_path("4.9.1")
    [check] = scorer.environment_checks("smoke")
    assert check.verdict == "ok" and "Lean 4.9.1" in check.detail
    [check] = scorer.environment_checks("full")  # Mathlib needed, and no project set
    assert check.verdict == "warn" and "RESEARCH_CREW_LEAN_PROJECT" in check.fix


def test_a_scoring_time_limit_keeps_bleu_and_rouge_as_a_recorded_partial_score(lean_on_path, tmp_path, monkeypatch):
    (lean_on_path().parent / "bin" / "stall").write_text("")
    challenge = load_challenge("math_autoformalization")
    data, private = tmp_path / "data", tmp_path / "private"
    data.mkdir(), private.mkdir()
    items = [{"id": f"t{i}", "nl_statement": "x", "header": "", "formal_statement": f"theorem t{i} : True"}
             for i in range(4)]
    (data / "test.jsonl").write_text("".join(json.dumps({"id": i["id"]}) + "\n" for i in items))
    (private / "references.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    submission = tmp_path / "submission"
    submission.mkdir()
    predictions = [{"id": i["id"], "formal_statement": i["formal_statement"]} for i in items]
    (submission / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions))
    ctx = ScoreContext(challenge=challenge.name, preset="smoke", data_dir=data, private_dir=private,
                       scratch_dir=tmp_path / "scratch")
    record = evaluate(challenge, submission, ctx, tmp_path / "evaluations", timeout_s=30)  # imports on a busy machine
    assert record.timed_out and record.ok and record.score == pytest.approx(1.0)
    assert record.details["bleu"] == pytest.approx(100.0) and record.details["compile_rate"] is None
    assert "time limit of 30s" in record.details["partial"]


@pytest.mark.skipif(shutil.which("lean") is None, reason="needs a real Lean 4 on PATH")
def test_real_lean_compiles_core_statements(lean, monkeypatch):
    monkeypatch.delenv("RESEARCH_CREW_LEAN_PROJECT", raising=False)
    toolchain = lean.find_toolchain(needs_mathlib=False)
    verdicts = lean.compile_items(["theorem a (n : Nat) : n + 0 = n", "theorem b (n : Nat) : n = undefined_thing"],
                                  ["", ""], toolchain, time.monotonic() + 300)
    assert verdicts == [True, False]
