"""What a challenge imported from MLAgentBench (`research-crew challenges import mlagentbench`) runs: upstream's own
prepare.py and eval.py, unchanged, from the folder's `upstream/` copy.

- prepare: upstream's prepare.py in a scratch copy of `upstream/`, its consent prompt answered; a Kaggle download
  is served from the folder MLAGENTBENCH_DATA names (`<competition>.zip`, as Kaggle gives it) when that is set,
  and refused early, with the fix, when neither that nor a Kaggle CLI with credentials is there. The prepared
  env/ becomes the agents' read-only data; scripts/ (answers, eval.py) the private folder.
- score: upstream's `get_score(submission_folder)` on the frozen submission folder, in the harness's scorer
  process (and so in its sandbox).
- timed_score: for tasks whose eval.py reads a runtime the submission wrote itself, the runtime is measured here
  instead: the submission's script is run several times in a fresh copy and the median wall time is the score.
- run_starter: the baseline recipe: upstream's starter script run as shipped (a blank-to-fill starter with the
  importer's fill), in a folder where the data files are linked, its outputs copied to the submission folder.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from challenges.framework.api import ChallengeError, DatasetUnavailable, EnvironmentCheck, Score, ScoreContext

DATA_VARIABLE = "MLAGENTBENCH_DATA"
FILL_START = "# ***********************************************"
KAGGLE_SHIM = '''#!{python}
"""Serves `kaggle competitions download -c NAME` from {folder} (research-crew, for upstream prepare.py)."""
import shutil, sys
from pathlib import Path
args = sys.argv[1:]
if args[:2] != ["competitions", "download"] or "-c" not in args:
    sys.exit(f"research-crew's local kaggle serves only `competitions download -c NAME`, not {{args}}")
name = args[args.index("-c") + 1]
source = Path({folder!r}) / f"{{name}}.zip"
if not source.is_file():
    sys.exit(f"{{source}} is missing: download it from https://www.kaggle.com/competitions/{{name}}/data")
shutil.copyfile(source, Path.cwd() / source.name)
'''


def check_data_source(kaggle: str | None) -> Path | None:
    """The local folder to serve the Kaggle zip from (None: the real Kaggle CLI downloads it); raise when neither
    can give it, before anything runs."""
    if not kaggle:
        return None
    url = f"https://www.kaggle.com/competitions/{kaggle}/data"
    if folder := os.environ.get(DATA_VARIABLE):
        zip_path = Path(folder).expanduser() / f"{kaggle}.zip"
        if not zip_path.is_file():
            raise DatasetUnavailable(f"{zip_path} is missing ({DATA_VARIABLE} names {folder})",
                                     f"download {kaggle}.zip from {url} (accept the rules there) into {folder}")
        return zip_path.parent
    credentials = Path.home() / ".kaggle" / "kaggle.json"
    if shutil.which("kaggle") and (credentials.is_file() or os.environ.get("KAGGLE_KEY")):
        return None
    raise DatasetUnavailable(
        f"the data is the Kaggle competition {kaggle}; {DATA_VARIABLE} is not set and no Kaggle CLI with "
        "credentials is here",
        f"download {kaggle}.zip from {url} (accept the competition's rules there) into a folder and set "
        f"{DATA_VARIABLE} to that folder (or install the kaggle CLI with ~/.kaggle/kaggle.json)")


def data_source_checks(kaggle: str | None) -> list[EnvironmentCheck]:
    """For `research-crew doctor`: can the Kaggle zip be had here (a local folder, or the Kaggle CLI)?"""
    if not kaggle:
        return []
    try:
        folder = check_data_source(kaggle)
    except DatasetUnavailable as err:
        return [EnvironmentCheck("Kaggle data", "fail", err.message, err.hint)]
    where = f"{folder}/{kaggle}.zip" if folder else "the Kaggle CLI with credentials (needs the network)"
    return [EnvironmentCheck("Kaggle data", "ok", f"{kaggle} from {where}")]


def prepare(ctx: ScoreContext, kaggle: str | None = None) -> None:
    """Run upstream's prepare.py unchanged and split what it made into data (env/) and private (scripts/)."""
    served_from = check_data_source(kaggle)
    upstream = Path(ctx.challenge_dir or ".") / "upstream"
    work = ctx.scratch_dir / "upstream"
    shutil.copytree(upstream, work, ignore=shutil.ignore_patterns("UPSTREAM.json", "__pycache__"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if served_from is not None:
        shim_dir = ctx.scratch_dir / "bin"
        shim_dir.mkdir()
        shim = shim_dir / "kaggle"
        shim.write_text(KAGGLE_SHIM.format(python=sys.executable, folder=str(served_from)), encoding="utf-8")
        shim.chmod(0o755)
        env["PATH"] = f"{shim_dir}{os.pathsep}{env.get('PATH', '')}"
    scripts = work / "scripts"
    if (scripts / "prepare.py").is_file():
        done = subprocess.run([sys.executable, "prepare.py"], cwd=scripts, env=env, input="\n" * 8, text=True,
                              capture_output=True)
        if done.returncode != 0:
            tail = (done.stdout + done.stderr)[-2000:]
            raise ChallengeError(f"upstream prepare.py failed (exit {done.returncode}):\n{tail}",
                                 "fix what the output above names, then run again")
    shutil.copytree(work / "env", ctx.data_dir, dirs_exist_ok=True)
    shutil.copytree(scripts, ctx.private_dir / "scripts", dirs_exist_ok=True)


def check(submission: Path, required: tuple[str, ...]) -> list[str]:
    if not submission.is_dir():
        return [f"the submission must be a folder (upstream's get_score reads a folder), got the file "
                f"{submission.name}"]
    return [f"the submission folder has no {name}" for name in required if not (submission / name).is_file()]


def score(submission: Path, ctx: ScoreContext) -> Score:
    """Upstream's get_score(submission_folder), run where the prepared env/ is the working directory."""
    eval_py = ctx.private_dir / "scripts" / "eval.py"
    for folder in (str(eval_py.parent), str(ctx.data_dir)):  # eval.py's own imports (metric.py in env/)
        if folder not in sys.path:
            sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("mlagentbench_eval", eval_py)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    os.chdir(ctx.data_dir)
    spec.loader.exec_module(module)
    value = module.get_score(str(submission))
    return Score(float(value), details={"scored_by": "upstream scripts/eval.py get_score"})


def timed_score(submission: Path, ctx: ScoreContext, entry: str, repeats: int = 3) -> Score:
    """The median wall time of `python ENTRY` run `repeats` times, each in a fresh copy of the submission with the
    data linked in; whatever runtime the submission wrote itself is ignored."""
    limit = max(30.0, ctx.time_limit_s / (repeats + 1))
    runs = []
    for attempt in range(repeats):
        work = ctx.scratch_dir / f"timing-{attempt}"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(submission, work)
        for path in work.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)  # the frozen copy is read-only; the script may write
        _link_data(ctx.data_dir, work)
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, entry], cwd=work, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as err:
            raise ChallengeError(f"{entry} ran past {limit:.0f} s on timing run {attempt + 1}") from err
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise ChallengeError(f"{entry} failed on timing run {attempt + 1} (exit {done.returncode}): "
                                 f"{done.stderr[-1000:]}")
        runs.append(round(elapsed, 4))
    details = {"runs_s": runs, "measured": f"wall time of python {entry}, median of {repeats}; the submission's own "
                                           "figure is ignored"}
    claimed = submission / "submission.csv"
    if claimed.is_file():  # kept for comparison only
        details["self_reported"] = claimed.read_text(encoding="utf-8", errors="replace")[:40].strip()
    return Score(statistics.median(runs), details=details)


def run_starter(challenge_dir: Path, data_dir: Path, out_dir: Path, budget_s: float, entry: str,
                fill: Path | None = None) -> int:
    """Run upstream's starter as shipped (with the fill in its blank, if any) beside the data; copy its outputs
    and its code into out_dir. Returns the script's exit status."""
    work = out_dir.with_name(out_dir.name + "-work")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(challenge_dir / "baseline", work)
    if fill is not None:
        fill_blank(work / entry, fill.read_text(encoding="utf-8"))
    _link_data(data_dir, work)
    done = subprocess.run([sys.executable, entry], cwd=work, timeout=max(60.0, budget_s))
    if done.returncode != 0:
        return done.returncode  # nothing is submitted from a failed run
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in work.iterdir():  # what the script wrote and the code that wrote it; not the data links
        if path.is_file() and not path.is_symlink():
            shutil.copy2(path, out_dir / path.name)
    return done.returncode


def fill_blank(script: Path, code: str) -> None:
    """Put `code` into the starter's blank: after the first banner block (three marker lines) it leaves empty."""
    lines = script.read_text(encoding="utf-8").splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.strip() == FILL_START]
    if len(marks) < 2:
        raise ChallengeError(f"{script.name} has no blank between '{FILL_START}' banners to fill",
                             "the starter changed upstream: update the fill or drop it")
    lines.insert(marks[1] + 1, code if code.endswith("\n") else code + "\n")
    script.write_text("".join(lines), encoding="utf-8")


def _link_data(data_dir: Path, work: Path) -> None:
    for path in Path(data_dir).iterdir():
        target = work / path.name
        if not target.exists() and not target.is_symlink():
            target.symlink_to(path.resolve())
