"""Soak test of resume: SIGKILL the run process at random instants, resume each time, check nothing is lost.

    python benchmarks/soak_resume.py [--kills 20] [--only crew|baseline] [--seed 0]

Two runs: a replay-driven crew on a toy challenge (its engineer starts a job, waits, evaluates; the
supervisor submits), compared with the same run uninterrupted, and the baseline policy on the MiniPile
smoke preset. Each is killed `--kills` times (SIGKILL to the research-crew process only: jobs and scorers
run in sessions of their own and must be re-attached, not started twice) and resumed at once. Printed:
kills, resumes, lost steps (steps that had completed but were not in the snapshot resumed from: must
be 0), jobs started against jobs asked for, processes left behind, and whether the ledger and the
submission equal the uninterrupted run's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from crew_rig import toy_challenge  # noqa: E402

from crew.run.events import ToolResults  # noqa: E402
from crew.run.rundir import RunDir  # noqa: E402
from crew.run.trace import read_events  # noqa: E402

CLI = shutil.which("research-crew") or "research-crew"


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


CREW_SCRIPT = {
    "supervisor": [call("update_plan", phase="exploration", status="one job, then evaluate", minutes=1),
                   call("delegate", role="engineer", subtask="Run the writer job, wait, evaluate answer.txt.",
                        minutes=2),
                   call("submit", evaluation_id="eval-0001", rationale="the verified evaluation")],
    "engineer": [call("write_file", path="notes.txt", content="plan: job writes the answer"),
                 *[call("run_bash", command=f"sleep 0.4; echo look {i} >> notes.txt", timeout_s=30) for i in range(30)],
                 call("start_job", command="sleep 2; echo 0.75 > answer.txt; echo progress: 1/1", name="writer"),
                 call("job_status", job_id="001-writer"),
                 call("run_bash", command="for i in $(seq 60); do [ -s answer.txt ] && break; sleep 0.5; done; "
                                          "cat answer.txt", timeout_s=60),
                 call("evaluate", artifact_path="answer.txt"),
                 call("report", changed="answer.txt", commands="job 001-writer", evaluations=["eval-0001"],
                      learned="0.75", proposes="submit")],
}


def ledger(run_dir: Path) -> list[tuple]:
    records = [json.loads(p.read_text()) for p in sorted(RunDir(run_dir).evaluations.glob("eval-*.json"))]
    return [(r["id"], r["score"], r["sha256"]) for r in records]


def completed_steps(run_dir: Path) -> int:
    """The highest step whose tool results reached the trace (a step that completed)."""
    return max([0, *(e.step for e in read_events(RunDir(run_dir).trace) if isinstance(e, ToolResults))])


def snapshot_step(run_dir: Path) -> int:
    for name in ("latest.json", "previous.json"):
        try:
            return json.loads((RunDir(run_dir).state / name).read_text())["step"]
        except (FileNotFoundError, json.JSONDecodeError):
            continue
    return 0


def left_behind(run_dir: Path) -> list[str]:
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd", "status"]):
        try:
            text = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["cwd"] or "")
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
        if str(run_dir) in text and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(f"{proc.pid} {text[:120]}")
    return found


def trace_events(run_dir: Path) -> int:
    path = RunDir(run_dir).trace
    return path.read_bytes().count(b"\n") if path.exists() else 0


def soak(first: list[str], run_dir: Path, kills: int, rng: random.Random, env: dict, max_delay: float) -> dict:
    resumes, lost, done_kills = 0, 0, 0
    command = first
    while True:
        before = trace_events(run_dir)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if done_kills < kills:
            # The instant is random within the run's work: after the process has written its first event
            # (start-up, imports and data preparation are not what a kill should keep hitting).
            while trace_events(run_dir) <= before and proc.poll() is None:
                time.sleep(0.05)
            try:
                proc.wait(timeout=rng.uniform(0.0, max_delay))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                done_kills += 1
                lost += max(0, completed_steps(run_dir) - snapshot_step(run_dir) - 1)  # the step in flight is redone
                command, resumes = [CLI, "resume", str(run_dir)], resumes + 1
                continue
        code = proc.wait(timeout=900)
        if code == 3:  # interrupted by an outside cause: resume again
            command, resumes = [CLI, "resume", str(run_dir)], resumes + 1
            continue
        return {"kills": done_kills, "resumes": resumes, "lost_steps": lost, "exit": code}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--only", choices=["crew", "baseline"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    env = {**os.environ, "RESEARCH_CREW_MEMORY_DIR": str(tmp / "memory")}
    if args.only in (None, "crew"):
        toy_challenge(tmp / "challenges")
        env["RESEARCH_CREW_CHALLENGE_PATH"] = str(tmp / "challenges")
        script = tmp / "script.yaml"
        script.write_text(yaml.safe_dump(CREW_SCRIPT))
        base = [CLI, "run", "toy", "--preset", "smoke", "--model", f"replay:{script}", "--budget", "20m"]
        reference, soaked = tmp / "crew-reference", tmp / "crew-soaked"
        subprocess.run([*base, "--run-dir", str(reference)], env=env, check=True, capture_output=True)
        figures = soak([*base, "--run-dir", str(soaked)], soaked, args.kills, rng, env, max_delay=1.5)
        report("crew (replayed, toy challenge)", figures, soaked, reference, asked_jobs=1)
    if args.only in (None, "baseline"):
        soaked = tmp / "baseline-soaked"
        command = [CLI, "run", "minipile", "--preset", "smoke", "--model", "baseline", "--budget", "5m",
                   "--run-dir", str(soaked)]
        figures = soak(command, soaked, args.kills, rng, env, max_delay=6.0)
        report("baseline policy (MiniPile smoke)", figures, soaked, None, asked_jobs=1)
    print(f"(run folders under {tmp})")


def report(title: str, figures: dict, soaked: Path, reference: Path | None, asked_jobs: int) -> None:
    result = json.loads(RunDir(soaked).result.read_text())
    jobs = len([p for p in RunDir(soaked).jobs.iterdir() if p.is_dir()])
    time.sleep(1)
    print(f"{title}: kills {figures['kills']}, resumes {figures['resumes']}, lost steps {figures['lost_steps']}, "
          f"status {result['status']} (exit {figures['exit']}), score {result['score']}")
    print(f"  jobs started {jobs} (asked for {asked_jobs}); processes left behind: {len(left_behind(soaked))}")
    if reference is not None:
        ref = json.loads(RunDir(reference).result.read_text())
        same_ledger = ledger(soaked) == ledger(reference)
        same_submission = result["submission"] == {**ref["submission"], "path": result["submission"]["path"]} or (
            result["submission"]["evaluation"] == ref["submission"]["evaluation"]
            and result["submission"]["sha256"] == ref["submission"]["sha256"])
        print(f"  ledger equals the uninterrupted run's: {same_ledger}; submission equal: {same_submission}")


if __name__ == "__main__":
    main()
