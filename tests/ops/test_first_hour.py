"""A new user's first hour (issue 22): scores that say their set, damaged and abandoned runs, checks made before
a run directory exists, and the flags that must not record what nothing enforces."""

from __future__ import annotations

import json
import os
import time

from tests.foundation.helpers import write_challenge
from tests.ops.helpers import cli, invoke, ops_env

# Per-item results, so the harness splits dev and held-out items and the three scores differ.
ITEM_SCORER = """\
from challenges import Score

def score(submission, ctx):
    v = float(submission.read_text())
    items = {f"i{k}": v * k / 59 for k in range(60)}
    return Score(sum(items.values()) / len(items), {}, items={"g": items})
"""
RECIPE = "import sys\nopen(sys.argv[1], 'w').write(sys.argv[2])\n"


def _toy_with_items(root, name: str = "itemtoy"):
    from tests.foundation.helpers import TOML

    toml = TOML.format(name=name) + '\n[baseline]\ncommand = "python baseline/make.py {submission_dir} 0.5"\n'
    folder = write_challenge(root, name, scorer=ITEM_SCORER, toml=toml)
    (folder / "baseline").mkdir()
    (folder / "baseline" / "make.py").write_text(RECIPE)
    return folder


def test_every_score_says_its_set_and_a_damaged_run_is_refused_without_losing_its_report(tmp_path):
    _toy_with_items(tmp_path / "challenges")
    env = ops_env(tmp_path)
    run_dir = tmp_path / "runs" / "toy-1"
    proc = cli("run", "itemtoy", "--preset", "smoke", "--model", "baseline", "--budget", "2m", "--max-cost", "5",
               "--quiet", "--run-dir", str(run_dir), env=env)
    result = json.loads((run_dir / "result.json").read_text())
    dev, full = result["scores"]["dev"], result["scores"]["full"]
    assert dev != full and result["score"] == full and result["score_set"] == "full"
    assert f"evaluation eval-0001: score {dev:.4f} (dev set)" in proc.stdout
    assert f"score: {full:.4f} (full set; value, max)" in proc.stdout
    assert "--max-cost has no effect" in proc.stdout and "model cost cap" not in proc.stdout
    # A baseline run's sandbox is the same in run.toml, the trace and result.json.
    assert 'sandbox = "none"' in (run_dir / "run.toml").read_text() and result["sandbox"]["kind"] == "none"
    started = json.loads((run_dir / "trace.jsonl").read_text().splitlines()[0])
    assert started["kind"] == "run_started" and started["sandbox"] == "none"

    assert f"value = {dev:.4f} (dev set) from eval-0001" in invoke("status", str(run_dir)).output
    assert f"{full:.4f} (full set)" in invoke("runs", str(tmp_path / "runs")).output
    assert f"{dev:.4f} (dev set)" in invoke("experiments", str(run_dir)).output
    report = (run_dir / "report.md").read_text()
    assert f"{dev:.4f} (dev set)" in report and f"{full:.4f} (full set)" in report
    assert "ETA" not in report  # a finished job has no time left
    # The plot's baseline line is the baseline policy's dev score, where this run's own evaluation sits.
    assert result["baseline_dev_score"] == dev and result["baseline_score"] == full
    assert not (run_dir / "report_files" / "usage.png").exists()  # no model calls: no empty token plot

    resumed = invoke("resume", str(run_dir)).output  # a finished run: the same closing lines as `run`
    assert f"score: {full:.4f} (full set; value, max)" in resumed and f"run directory: {run_dir}" in resumed

    good_md, good_html = report, (run_dir / "report.html").read_bytes()
    with open(run_dir / "run.toml", "a") as toml:
        toml.write("x = = [\n")
    for command in ("status", "report", "experiments", "resume"):
        output = invoke(command, str(run_dir), code=2).output
        assert "run.toml is damaged" in output and "hint: restore run.toml" in output, (command, output)
        assert "Traceback" not in output and len(output.strip().splitlines()) == 2
    assert (run_dir / "report.md").read_text() == good_md and (run_dir / "report.html").read_bytes() == good_html
    listing = invoke("runs", str(tmp_path / "runs")).output
    assert "toy-1" in listing and "damaged (run.toml is damaged" in listing


def test_a_run_that_never_ended_is_listed_as_abandoned(tmp_path):
    _toy_with_items(tmp_path / "challenges")
    env = ops_env(tmp_path)
    run_dir = tmp_path / "runs" / "old"
    cli("run", "itemtoy", "--preset", "smoke", "--model", "baseline", "--budget", "2m", "--quiet", "--run-dir",
        str(run_dir), env=env)
    # As a run killed two hours ago and never resumed leaves it: no end in the trace, no result.json.
    lines = (run_dir / "trace.jsonl").read_text().splitlines()
    (run_dir / "trace.jsonl").write_text("".join(line + "\n" for line in lines
                                                 if json.loads(line)["kind"] != "run_finished"))
    (run_dir / "result.json").unlink()
    toml = (run_dir / "run.toml").read_text()
    started = float(next(line for line in toml.splitlines() if line.startswith("started_at")).split("=")[1])
    (run_dir / "run.toml").write_text(toml.replace(repr(started), repr(started - 7200)))
    two_hours_ago = time.time() - 7200
    for path in run_dir.rglob("*"):
        os.utime(path, (two_hours_ago, two_hours_ago))
    assert "abandoned" in invoke("runs", str(tmp_path / "runs")).output
    status = invoke("status", str(run_dir)).output
    assert "abandoned" in status and "resume" in status and "2h00m of 2m00s" not in status


def test_what_can_be_checked_before_a_run_directory_exists_is(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_dir = tmp_path / "r"
    output = invoke("run", "minipile", "--preset", "smoke", "--model", "openai:gpt-5", "--run-dir", str(run_dir),
                    code=2).output
    assert "needs the environment variable OPENAI_API_KEY" in output and "preparing data" not in output
    output = invoke("run", "minipile", "--preset", "smoke", "--model", f"replay:{tmp_path / 'nope.yaml'}",
                    "--run-dir", str(run_dir), code=2).output
    assert "nope.yaml does not exist" in output
    # The default-model line comes only once the run starts, never ahead of an error.
    output = invoke("run", "minipile", "--preset", "tiny", "--run-dir", str(run_dir), code=2).output
    assert "no preset 'tiny'" in output and "using the baseline policy" not in output
    script = tmp_path / "script.yaml"
    script.write_text("supervisor: []\n")
    output = invoke("run", "minipile", "--preset", "smoke", "--model", f"replay:{script}", "--sandbox", "none",
                    "--agent-network", "off", "--run-dir", str(run_dir), code=2).output
    assert "--agent-network off needs the bwrap sandbox" in output
    assert not run_dir.exists()


def test_a_run_that_fails_while_it_is_set_up_leaves_a_result_that_says_why(tmp_path, monkeypatch):
    _toy_with_items(tmp_path / "challenges")
    for key, value in ops_env(tmp_path).items():
        monkeypatch.setenv(key, value)

    def disk_full(workspace):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("crew.policy.runner.init_repo", disk_full)  # the disk filling up between two steps of setup
    run_dir = tmp_path / "runs" / "full-disk"
    invoke("run", "itemtoy", "--preset", "smoke", "--model", "baseline", "--budget", "2m", "--quiet",
           "--run-dir", str(run_dir), code=1)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and "No space left on device" in result["note"]
    assert "failed" in invoke("runs", str(tmp_path / "runs")).output


def test_skip_checks_skips_the_gpu_refusal_too(tmp_path, monkeypatch):
    monkeypatch.setattr("crew.policy.runner.gpu_count", lambda: 0)
    output = invoke("run", "minipile", "--skip-checks", "--run-dir", str(tmp_path / "r"), code=2).output
    assert "needs 1 GPU" not in output and "AlgorithmicResearchGroup/minipile" in output  # on to the download


def test_a_new_challenge_may_not_take_a_known_name(tmp_path):
    output = invoke("challenges", "new", "minipile", "--dir", str(tmp_path), code=2).output
    assert "a challenge named 'minipile' exists already" in output and not (tmp_path / "minipile").exists()


def test_tables_keep_whole_names_when_output_is_not_a_terminal():
    listing = invoke("challenges", "list").output  # under the test runner stdout is no terminal
    assert "math_autoformalization" in listing and "edge_llm_compression" in listing


def test_loading_the_embedding_model_prints_no_progress_bar():
    import subprocess
    import sys

    from tests.ops.helpers import REPO

    proc = subprocess.run([sys.executable, "-c", "from memory.embedding import BUNDLED_ID, _load; "
                           "_load(BUNDLED_ID, 'cpu')"], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "Loading weights" not in proc.stderr + proc.stdout


def test_the_plots_shaded_band_is_named_in_their_legends(tmp_path):
    from crew.reporting import plots
    from crew.reporting.history import RunHistory, ScorePoint
    from crew.reporting.snapshot import RunSnapshot

    snapshot = RunSnapshot(root=tmp_path, config={"model": "openai:m"}, budget_s=180.0, reserve_s=40.0,
                           metric={"name": "heldout_bits_per_byte", "direction": "min"})
    history = RunHistory(snapshot=snapshot, result={"baseline_dev_score": 3.0}, events=[], start=0.0, end=150.0,
                         scores=[ScorePoint("eval-0001", 60.0, 2.9, True)])
    for figure in (plots.timeline_figure(history), plots.scores_figure(history)):
        labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
        assert "scoring reserve" in labels and "budget end" in labels, labels
        plots.plt.close(figure)
