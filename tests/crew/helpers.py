"""Running a replayed crew on a toy challenge, in process, for the crew's tests."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from crew.policy.runner import RunRequest, start_run
from tests.foundation.helpers import TOML, write_challenge


def call(tool: str, text: str | None = None, **arguments) -> dict:
    answer = {"tool_calls": [{"name": tool, "arguments": arguments}]}
    if text:
        answer["text"] = text
    return answer


# The happy path on the toy challenge: the engineer writes a number, evaluates it, reports.
ENGINEER_OK = [
    call("write_file", path="answer.txt", content="0.75"),
    call("evaluate", artifact_path="answer.txt"),
    call("report", changed="answer.txt", commands="none", evaluations=["eval-0001"], learned="0.75 scores",
         proposes="submit eval-0001"),
]
SUPERVISOR_OK = [
    call("delegate", role="engineer", subtask="Write 0.75 to answer.txt and evaluate it.", minutes=1),
    call("submit", evaluation_id="eval-0001", rationale="verified"),
]


API_MODEL = "anthropic:claude-sonnet-4-6"  # priced, so cost is counted; served by tests/apiserver


def run_crew(tmp_path: Path, monkeypatch, script: dict | str, budget: str = "2m", name: str = "run",
             server=None, model: str = API_MODEL, **request):
    """Run the toy challenge with a crew; return (exit code, run dir, result, events). With `server` (the
    api_server fixture) the script is played by the protocol-exact API server through our Anthropic client
    and the official SDK over HTTP; without it, by the `replay:` client."""
    challenges = tmp_path / "challenges"
    if not (challenges / "toy").exists():
        write_challenge(challenges, "toy")
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", str(challenges))
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "global-memory"))
    if server is None:
        if isinstance(script, dict):
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump(script))
            script = str(path)
        model = f"replay:{script}"
    code, run = start_run(RunRequest("toy", preset="smoke", model=model, budget=budget, run_dir=tmp_path / name,
                                     **request))
    result = json.loads(run.result.read_text())
    events = [json.loads(line) for line in run.trace.read_text().splitlines()]
    return code, run, result, events


def kinds(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


# The recipe takes a few seconds, so that the supervisor's idle wait ends on its job's exit.
RECIPE = """\
import argparse, pathlib, time
parser = argparse.ArgumentParser()
parser.add_argument("--out"); parser.add_argument("--budget-s", type=float)
args = parser.parse_args()
time.sleep(2)
pathlib.Path(args.out).write_text("0.5")
"""


def toy_with_recipe(tmp_path):
    """The toy challenge with a baseline recipe that writes 0.5 (for experiment 0, crew/policy/floor.py)."""
    toml = TOML.format(name="toy") + '\n[baseline]\ncommand = "python baseline/train.py --out {submission_dir} ' \
                                     '--budget-s {budget_s}"\n'
    folder = write_challenge(tmp_path / "challenges", "toy", toml=toml)
    (folder / "baseline").mkdir()
    (folder / "baseline" / "train.py").write_text(RECIPE)
