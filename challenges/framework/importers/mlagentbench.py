"""`research-crew challenges import mlagentbench PATH`: one challenge folder per MLAgentBench task, upstream's files
kept byte for byte.

Each folder holds upstream's env/ and scripts/ verbatim under upstream/ (with UPSTREAM.json: the commit and every
file's sha256), the starter files again as baseline/ (where the agents' workspace starts), a challenge.toml, a
task.md that is upstream's research problem, and small prepare.py / scorer.py / baseline_run.py files that run
upstream's own prepare.py and eval.py through challenges/lib/mlagentbench.py. What upstream states only in prose
or in its plotting script (the metric's direction, the fixed baselines) is read from the checkout where it is
there (plot.py, runner.py) and from the small table below where it is not.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w
from packaging.requirements import Requirement

from challenges.framework.api import ChallengeError
from challenges.framework.requirements import unmet
from challenges.framework.validator import NAME_PATTERN
from challenges.lib.mlagentbench import DATA_VARIABLE

# Upstream names each task's metric and its direction only in the research problem's prose or the paper.
METRICS = {
    "house-price": ("mae", "min"), "spaceship-titanic": ("accuracy", "max"), "vectorization": ("runtime_s", "min"),
    "cifar10": ("accuracy", "max"), "imdb": ("accuracy", "max"), "ogbn-arxiv": ("accuracy", "max"),
    "amp-parkinsons-disease-progression-prediction": ("smape", "min"), "feedback": ("mcrmse", "min"),
    "fathomnet": ("map_auc", "max"), "identify-contrails": ("dice", "max"), "babylm": ("perplexity", "min"),
    "CLRS": ("test_score", "max"),
}
# Blank-to-fill starters: the baseline recipe fills the blank with the simplest model the starter already imports.
FILLS = {
    "house-price": """model = RandomForestRegressor(random_state=1)
model.fit(train_X, train_y)
train_mae = mean_absolute_error(train_y, model.predict(train_X))
valid_mae = mean_absolute_error(valid_y, model.predict(valid_X))
""",
    "spaceship-titanic": """model = LogisticRegression(random_state=0, max_iter=1000)
model.fit(ResourceX, TargetY)
train_accuracy = model.score(ResourceX, TargetY)
val_accuracy = model.score(ResourceX_test, TargetY_test)
""",
}
# Versions a starter needs that its files do not say: vectorization's train.py stops with "ValueError: setting an
# array element with a sequence" under NumPy 2.4 (it assigns a 1-element array to an array element).
CONSTRAINTS = {"vectorization": ["numpy<2.4"]}
IMPORT_TO_PIP = {"sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "Pillow", "yaml": "PyYAML",
                 "torch_geometric": "torch-geometric", "absl": "absl-py", "skimage": "scikit-image",
                 "tensorflow_datasets": "tensorflow-datasets", "dm_haiku": "dm-haiku", "haiku": "dm-haiku"}
GPU_MODULES = {"torch", "jax", "tensorflow", "transformers"}
NETWORK_MARKERS = {"wget": r"\bwget\b", "download=True": r"download\s*=\s*True",
                   "load_dataset": r"load_dataset\(\s*['\"]", "an ogb dataset": r"PygNodePropPredDataset\(",
                   "urlopen": r"urlopen\(", "requests": r"requests\.get\("}
TIMING_WORDS = re.compile(r"execution speed|run ?time|runtime|faster", re.IGNORECASE)
DEFAULT_HOURS = 5.0  # runner.py's --max-time default, when it cannot be read


@dataclass
class Upstream:
    """Facts about the checkout the tasks come from."""

    commit: str
    repository: str = "snap-stanford/MLAgentBench"
    references: dict[str, float] = field(default_factory=dict)  # plot.py's fixed baseline figures
    hours: float = DEFAULT_HOURS


@dataclass
class TaskReport:
    task: str
    folder: Path | None = None
    metric: str = ""
    direction: str = ""
    reference_score: float | None = None
    runnable_offline: bool = False
    reasons: list[str] = field(default_factory=list)  # why it does not run here offline
    missing_packages: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)


def find_tasks(path: Path) -> tuple[Path, list[Path]]:
    """(the checkout's root, the task folders) for a checkout, its benchmarks/ folder or one task folder."""
    path = Path(path).expanduser().resolve()
    if (path / "env").is_dir() and (path / "scripts").is_dir():
        return path, [path]
    for benchmarks in (path / "MLAgentBench" / "benchmarks", path / "benchmarks", path):
        tasks = sorted(p for p in benchmarks.iterdir() if (p / "env").is_dir()) if benchmarks.is_dir() else []
        if tasks:
            return path, tasks
    raise ChallengeError(f"{path} is neither an MLAgentBench checkout nor a benchmarks/<task> folder",
                         "give the checkout's root (git clone https://github.com/snap-stanford/MLAgentBench) "
                         "or one task folder holding env/ and scripts/")


def read_upstream(task_dir: Path) -> Upstream:
    """The commit (git) and what runner.py and plot.py state, looked for above the task folder."""
    done = subprocess.run(["git", "-C", str(task_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    upstream = Upstream(commit=done.stdout.strip() if done.returncode == 0 else "unknown (not a git checkout)")
    for parent in task_dir.parents:
        plot, runner = parent / "plot.py", parent / "runner.py"
        if plot.is_file():
            text = plot.read_text(encoding="utf-8", errors="replace")
            pairs = re.findall(r'"task"\s*:\s*"([\w-]+)",\s*"exp"\s*:\s*"Baseline",\s*"final_score"\s*:\s*'
                               r'([-\d.e+]+)', text)
            pairs += re.findall(r'\["task"\]\s*==\s*"([\w-]+)"\]\.index\.values\[0\],\s*"final_score"\]\s*=\s*'
                                r'([-\d.e+]+)', text)
            upstream.references = {task: float(value) for task, value in pairs}
        if runner.is_file():
            found = re.search(r'"--max-time".*?default=\s*([\d\s*]+)', runner.read_text(encoding="utf-8"))
            if found:
                upstream.hours = eval_product(found.group(1)) / 3600
        if plot.is_file() or runner.is_file():
            break
    return upstream


def eval_product(text: str) -> float:
    """`5* 60 * 60` -> 18000 (digits and * only, never eval)."""
    result = 1.0
    for factor in text.split("*"):
        result *= float(factor.strip())
    return result


def import_tasks(path: Path, into: Path, task: str | None = None, all_tasks: bool = False) -> list[TaskReport]:
    root, tasks = find_tasks(path)
    if len(tasks) > 1:
        if task is not None:
            chosen = [t for t in tasks if t.name == task]
            if not chosen:
                raise ChallengeError(f"no task '{task}' in {root}",
                                     f"choose one of: {', '.join(t.name for t in tasks)}")
            tasks = chosen
        elif not all_tasks:
            raise ChallengeError(f"{root} holds {len(tasks)} tasks", "name one with --task T, or pass --all")
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    upstream = read_upstream(tasks[0])
    return [import_task(task_dir, into, upstream) for task_dir in tasks]


def import_task(task_dir: Path, into: Path, upstream: Upstream) -> TaskReport:
    name = task_dir.name if NAME_PATTERN.match(task_dir.name) else re.sub(r"[^A-Za-z0-9_-]", "-", task_dir.name)
    report = TaskReport(task=name)
    facts = analyse(task_dir, upstream, report)
    folder = into / name
    if folder.exists() and not (folder / "upstream" / "UPSTREAM.json").is_file():
        report.reasons.insert(0, f"not written: {folder} exists and is not an earlier import")
        return report
    shutil.rmtree(folder, ignore_errors=True)
    write_folder(task_dir, folder, upstream, facts, report)
    report.folder = folder
    return report


@dataclass
class Facts:
    problem: str
    entry: str
    kaggle: str | None
    has_score: bool
    self_reported: bool
    sentinels: list[float]
    gpus: int
    requirements: list[str]


def analyse(task_dir: Path, upstream: Upstream, report: TaskReport) -> Facts:
    """Read the task's files (never run them) and fill the report's verdict."""
    scripts, env = task_dir / "scripts", task_dir / "env"
    problem = _read(scripts / "research_problem.txt")
    eval_src, prepare_src = _read(scripts / "eval.py"), _read(scripts / "prepare.py")
    entry = next(iter(re.findall(r"\b(\w+\.py)\b", problem)), "train.py")
    has_score = bool(eval_src) and _defines(eval_src, "get_score")
    if not eval_src:
        report.reasons.append("no eval.py: upstream gives no way to score this task")
    elif not has_score:
        report.reasons.append("eval.py defines no get_score(submission_folder)")
    kaggle = None
    if "kaggle" in prepare_src:
        found = re.search(r'taskname\s*=\s*"([^"]+)"', prepare_src)
        kaggle = found.group(1) if found else None
        where = re.search(r'download_dir\s*=\s*(.+)', prepare_src)
        if where and where.group(1).strip() not in ('"../env"', "'../env'"):
            report.reasons.append(f"prepare.py downloads into {where.group(1).strip()}, which does not exist beside "
                                  "scripts/: it fails as shipped")
        zip_here = _kaggle_zip_present(kaggle)
        if not zip_here:
            report.reasons.append(f"data source unreachable offline: the Kaggle competition {kaggle} (put "
                                  f"{kaggle}.zip in a folder and set {DATA_VARIABLE} to it)")
    elif downloads := _network(prepare_src):
        report.reasons.append(f"data source unreachable offline: prepare.py downloads ({', '.join(downloads)})")
    # What prepare fetched into env/ is found there when eval.py or the starter runs (both run in the prepared env/).
    if has_score and (downloads := [d for d in _network(eval_src) if d not in _network(prepare_src)]):
        report.reasons.append(f"a download while scoring (eval.py: {', '.join(downloads)}): the scoring sandbox "
                              "has no network")
    starter_src = "\n".join(_read(p) for p in sorted(env.glob("*.py")))
    if downloads := [d for d in _network(starter_src) if d not in _network(prepare_src)]:
        report.reasons.append(f"the starter downloads when it runs ({', '.join(downloads)})")
    self_reported = (has_score and "__file__" not in eval_src and not _network(eval_src)
                     and bool(TIMING_WORDS.search(problem)))
    if self_reported:
        report.notes.append(f"eval.py reads a runtime the submission wrote itself: the scorer times {entry} "
                            "instead (median of 3 runs)")
    sentinels = _sentinels(eval_src) if has_score else []
    if sentinels:
        report.notes.append(f"eval.py returns {', '.join(f'{s:g}' for s in sentinels)} on an error: recorded as a "
                            "violation, never a score")
    modules = _imports([*env.glob("*.py"), scripts / "eval.py", scripts / "prepare.py"],
                       {p.stem for p in [*env.glob("*.py"), *scripts.glob("*.py")]} | {p.name for p in env.iterdir()
                                                                                        if p.is_dir()})
    gpus = 1 if modules & GPU_MODULES else 0
    if gpus and not _gpu_here():
        report.reasons.append("needs a GPU (upstream runs it on one device); none here")
    constrained = CONSTRAINTS.get(task_dir.name, [])
    names = {IMPORT_TO_PIP.get(m, m) for m in modules} - {Requirement(c).name for c in constrained}
    requirements = sorted(names | set(_requirements_txt(task_dir)) | set(constrained))
    if unmet_constraints := unmet(constrained):
        report.reasons.append("needs " + ", ".join(f"{spec} ({found})" for spec, found in unmet_constraints)
                              + ": run with --install-requirements")
    report.missing_packages = sorted(IMPORT_TO_PIP.get(m, m) for m in modules if importlib.util.find_spec(m) is None)
    if report.missing_packages:
        report.reasons.append(f"missing packages: {', '.join(report.missing_packages)}")
    report.metric, report.direction = METRICS.get(task_dir.name) or (
        ("runtime_s", "min") if self_reported else _guess_metric(problem, report))
    report.reference_score = upstream.references.get(task_dir.name)
    report.read_only = [line.strip().removeprefix("./") for line in _read(scripts / "read_only_files.txt").splitlines()
                        if line.strip()]
    if task_dir.name in FILLS:
        report.notes.append(f"{entry} is a blank to fill: the baseline recipe fills it with the model it imports")
    report.runnable_offline = not report.reasons
    return Facts(problem, entry, kaggle, has_score, self_reported, sentinels, gpus, requirements)


def write_folder(task_dir: Path, folder: Path, upstream: Upstream, facts: Facts, report: TaskReport) -> None:
    for part in ("env", "scripts"):
        if (task_dir / part).is_dir():
            shutil.copytree(task_dir / part, folder / "upstream" / part, symlinks=True)
    files = sorted(p for p in (folder / "upstream").rglob("*") if p.is_file())
    record = {"repository": upstream.repository, "commit": upstream.commit, "task": task_dir.name,
              "files": {str(p.relative_to(folder / "upstream")): _sha256(p) for p in files}}
    (folder / "upstream" / "UPSTREAM.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    shutil.copytree(task_dir / "env", folder / "baseline", symlinks=True)
    (folder / "challenge.toml").write_text(_toml(folder.name, upstream, facts, report), encoding="utf-8")
    (folder / "task.md").write_text(_task_md(facts, report), encoding="utf-8")
    (folder / "prepare.py").write_text(PREPARE.format(task=task_dir.name, kaggle=facts.kaggle), encoding="utf-8")
    (folder / "scorer.py").write_text(_scorer(task_dir.name, facts), encoding="utf-8")
    fill = FILLS.get(task_dir.name)
    if fill:
        (folder / "starter_fill.txt").write_text(fill, encoding="utf-8")
    (folder / "baseline_run.py").write_text(BASELINE_RUN.format(
        task=task_dir.name, entry=facts.entry, fill=repr("starter_fill.txt" if fill else None)), encoding="utf-8")


def _toml(name: str, upstream: Upstream, facts: Facts, report: TaskReport) -> str:
    submission = (f"a folder holding {facts.entry}, the code whose run is timed (the runtime it reports is ignored)"
                  if facts.self_reported else "a folder holding submission.csv, as upstream's eval.py reads it")
    metric = {"name": report.metric, "direction": report.direction, "success_threshold": 0.10}
    if facts.sentinels:
        metric["sentinels"] = facts.sentinels
    baseline: dict = {"command": "python baseline_run.py --data {data_dir} --out {submission_dir} "
                                 "--budget-s {budget_s}"}
    if report.reference_score is not None:
        baseline["reference_score"] = report.reference_score
    document = {
        "name": name, "title": f"MLAgentBench {name}",
        "source": f"MLAgentBench ({upstream.repository}@{upstream.commit[:12]}): benchmarks/{name}",
        "metric": metric, "submission": {"description": submission},
        "rules": {"allowed": [f"any change to the starter files in baseline/ ({facts.entry} first)"],
                  "forbidden": [f"changing the read-only data ({', '.join(report.read_only) or 'data/'})",
                                "reading the test answers or the scorer's files"]},
        "presets": {"full": {"description": "upstream's time limit (runner.py --max-time) and device",
                             "hours": round(upstream.hours, 4), "gpus": facts.gpus}},
        "baseline": baseline,
        "environment": {"requirements": facts.requirements},
        "feedback": {"agents": "none"},  # MLAgentBench's agents never see eval.py's result
    }
    if facts.kaggle:
        document["prepare"] = {"env": [DATA_VARIABLE]}
    return "# Imported by `research-crew challenges import mlagentbench`; upstream's files are in upstream/.\n" \
           + tomli_w.dumps(document)


def _task_md(facts: Facts, report: TaskReport) -> str:
    read_only = ", ".join(report.read_only) or "none listed"
    return (f"{facts.problem.rstrip()}\n\n---\n\nHere: the starter files are in `baseline/` (upstream's env/); the "
            f"data files are under `data/`, read-only (upstream's read-only files: {read_only}). Run scripts in a "
            "folder where the data files are reachable by the names the starter uses (link them in). The submission "
            "is a folder to `evaluate`; you see no score.\n")


def _scorer(task: str, facts: Facts) -> str:
    if not facts.has_score:
        return NO_SCORER.format(task=task)
    if facts.self_reported:
        return TIMED_SCORER.format(task=task, entry=facts.entry)
    return SCORER.format(task=task, kaggle=facts.kaggle)


PREPARE = '''"""MLAgentBench {task}: upstream's prepare.py, run unchanged (challenges/lib/mlagentbench.py)."""

from challenges import ScoreContext
from challenges.lib import mlagentbench

KAGGLE = {kaggle!r}  # the Kaggle competition upstream downloads (None: none)


def prepare(ctx: ScoreContext) -> None:
    mlagentbench.prepare(ctx, kaggle=KAGGLE)
'''
SCORER = '''"""MLAgentBench {task}: upstream's eval.py get_score on the submission folder."""

from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib import mlagentbench

KAGGLE = {kaggle!r}


def environment_checks(preset: str) -> list:
    return mlagentbench.data_source_checks(KAGGLE)


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    return mlagentbench.check(submission, ("submission.csv",))


def score(submission: Path, ctx: ScoreContext) -> Score:
    return mlagentbench.score(submission, ctx)
'''
TIMED_SCORER = '''"""MLAgentBench {task}: upstream's eval.py reads the runtime the submission wrote itself, so the
runtime is measured here instead: {entry} is run in a fresh copy several times and the median wall time is the score."""

from pathlib import Path

from challenges import Score, ScoreContext
from challenges.lib import mlagentbench

ENTRY = "{entry}"


def check(submission: Path, ctx: ScoreContext) -> list[str]:
    return mlagentbench.check(submission, (ENTRY,))


def score(submission: Path, ctx: ScoreContext) -> Score:
    return mlagentbench.timed_score(submission, ctx, ENTRY)
'''
NO_SCORER = '''"""MLAgentBench {task}: upstream gives no eval.py with get_score, so nothing can score it yet."""

from pathlib import Path

from challenges import ChallengeError, Score, ScoreContext


def score(submission: Path, ctx: ScoreContext) -> Score:
    raise ChallengeError("MLAgentBench {task} has no upstream eval.py get_score", "write score() here yourself")
'''
BASELINE_RUN = '''"""MLAgentBench {task}'s baseline recipe: upstream's starter {entry} run as shipped (a blank to
fill gets starter_fill.txt), beside the data; what it writes goes to the submission folder."""

import argparse
import sys
from pathlib import Path

from challenges.lib import mlagentbench

FILL = {fill}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, required=True)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    sys.exit(mlagentbench.run_starter(here, args.data, args.out, args.budget_s, "{entry}",
                                      here / FILL if FILL else None))
'''


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _defines(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def _sentinels(source: str) -> list[float]:
    """Numbers get_score returns from an except handler: its "could not score" value."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ExceptHandler):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Constant) \
                        and isinstance(inner.value.value, int | float) and not isinstance(inner.value.value, bool):
                    found.add(float(inner.value.value))
    return sorted(found)


def _network(source: str) -> list[str]:
    return [label for label, pattern in NETWORK_MARKERS.items() if re.search(pattern, source)]


def _imports(paths: list[Path], local: set[str]) -> set[str]:
    """Top-level third-party modules the files import (not the standard library, not the task's own modules)."""
    found = set()
    for path in paths:
        try:
            tree = ast.parse(_read(path))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in local and m != "__future__"}


def _requirements_txt(task_dir: Path) -> list[str]:
    from packaging.requirements import InvalidRequirement

    lines = []
    for path in (task_dir / "env" / "requirements.txt", task_dir / "scripts" / "requirements.txt"):
        for line in _read(path).splitlines():
            line = line.split("#")[0].strip()
            try:
                lines.append(str(Requirement(line))) if line else None
            except InvalidRequirement:
                continue
    return lines


def _kaggle_zip_present(kaggle: str | None) -> bool:
    import os

    folder = os.environ.get(DATA_VARIABLE)
    return bool(kaggle and folder and (Path(folder).expanduser() / f"{kaggle}.zip").is_file())


def _gpu_here() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def _guess_metric(problem: str, report: TaskReport) -> tuple[str, str]:
    direction = "min" if re.search(r"lower is better", problem, re.IGNORECASE) else "max"
    report.notes.append(f"metric unknown to the importer: named 'score', direction '{direction}' read from the "
                        "research problem; check challenge.toml")
    return "score", direction
