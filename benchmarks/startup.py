"""How long a whole run takes when the agents do almost nothing: the fixed cost every run (and many tests) pay.

    python benchmarks/startup.py [--runs 3]
    git worktree add /tmp/older HEAD~5; python benchmarks/startup.py --also /tmp/older   # side by side

A toy challenge and a replayed crew (write a number, evaluate it, submit) through `research-crew run`, in a
fresh process each time, with an empty memory store: imports, data preparation (cached after the first),
the sandbox check, the workspace repository, the loop, the harness scoring and the reports. Prints each
run's wall time and the median; with --also, another checkout's runs interleaved with this one's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from crew_rig import toy_challenge

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = {"supervisor": [{"tool_calls": [{"name": "delegate", "arguments": {
    "role": "engineer", "subtask": "Write 0.75 to answer.txt and evaluate it.", "minutes": 1}}]},
                         {"tool_calls": [{"name": "submit", "arguments": {"evaluation_id": "eval-0001",
                                                                           "rationale": "verified"}}]}],
          "engineer": [{"tool_calls": [{"name": "write_file", "arguments": {"path": "answer.txt", "content": "0.75"}}]},
                       {"tool_calls": [{"name": "evaluate", "arguments": {"artifact_path": "answer.txt"}}]},
                       {"tool_calls": [{"name": "report", "arguments": {
                           "changed": "answer.txt", "commands": "none", "evaluations": ["eval-0001"],
                           "learned": "0.75 scores", "proposes": "submit"}}]}]}
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also", type=Path, help="another checkout of research-crew to time the same way")
    args = parser.parse_args()
    repos = [ROOT, *([args.also.resolve()] if args.also else [])]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        toy_challenge(root / "challenges")
        (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
        times: dict[Path, list[float]] = {repo: [] for repo in repos}
        for n in range(args.runs):
            for repo in repos:
                env = {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(root / "challenges"),
                       "RESEARCH_CREW_CACHE": str(root / "cache"), "PYTHONPATH": str(repo),
                       "RESEARCH_CREW_MEMORY_DIR": str(root / f"memory-{len(times[repo])}-{repo.name}")}  # empty
                run_dir = root / f"run-{n}-{repo.name}"
                began = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "crew.cli", "run", "toy", "--preset", "smoke", "--model",
                                       f"replay:{root / 'script.yaml'}", "--run-dir", str(run_dir), "--quiet"],
                                      cwd=repo, env=env, capture_output=True, text=True)
                times[repo].append(time.perf_counter() - began)
                if done.returncode != 0:
                    raise SystemExit(f"{repo}: run {n} failed:\n{done.stdout}\n{done.stderr}")
                print(f"{repo}: run {n + 1}: {times[repo][-1]:.1f} s")
    for repo, seconds in times.items():
        print(f"{repo}: median {statistics.median(seconds):.1f} s over {args.runs} runs")

if __name__ == "__main__":
    main()
