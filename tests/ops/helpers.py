"""Toy challenges with baseline recipes and a replayed crew, for the operations tests (status, report, bench)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import Result
from typer.testing import CliRunner

from tests.crew.helpers import ENGINEER_OK, SUPERVISOR_OK
from tests.foundation.helpers import TOML, write_challenge

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"  # git-ignored: screenshots to look at after a run

# The recipe prints progress lines, sleeps `seconds` in all, then writes `value` as its submission.
RECIPE = """\
import sys, time
out, value, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
for i in range(1, 6):
    print(f"progress: {i}/5", flush=True)
    time.sleep(seconds / 5)
open(out, "w").write(value)
"""


def toy_with_baseline(root: Path, name: str, direction: str = "max", value: str = "0.5",
                      seconds: float = 0.2) -> Path:
    """A toy challenge (score = the number in the file) whose baseline recipe writes `value`."""
    toml = TOML.format(name=name).replace('direction = "max"', f'direction = "{direction}"')
    toml += f'\n[baseline]\ncommand = "python baseline/make.py {{submission_dir}} {value} {seconds}"\n'
    folder = write_challenge(root, name, toml=toml)
    (folder / "baseline").mkdir()
    (folder / "baseline" / "make.py").write_text(RECIPE)
    return folder


def crew_script(path: Path, engineer: list | None = None) -> Path:
    """The replayed crew: the engineer writes 0.75 and evaluates it, the supervisor submits it."""
    path.write_text(yaml.safe_dump({"supervisor": SUPERVISOR_OK, "engineer": engineer or ENGINEER_OK}))
    return path


def ops_env(tmp_path: Path) -> dict[str, str]:
    """The environment for research-crew subprocesses: toy challenges, caches and memory inside tmp_path."""
    return {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(tmp_path / "challenges"),
            "RESEARCH_CREW_MEMORY_DIR": str(tmp_path / "global-memory"),
            "RESEARCH_CREW_CACHE": str(tmp_path / "cache"), "RESEARCH_CREW_RUNS": str(tmp_path / "runs"),
            "PYTHONPATH": str(REPO)}


def cli(*args: str, env: dict[str, str], timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "crew.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def invoke(*args: str, code: int = 0) -> Result:
    """A research-crew command in this process (status, runs, report: no run starts), its exit code checked."""
    from crew.cli.main import app

    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result


def chromium() -> str | None:
    path = "/usr/bin/chromium"
    return path if Path(path).is_file() else shutil.which("chromium")
