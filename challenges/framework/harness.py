"""The scoring harness: the only source of scores.

It runs a challenge's `check` then `score` on an artifact in a subprocess of its own, bounded in
time and in how much of its output is kept, and writes one evaluations/ record per scoring. A scorer
that crashes, hangs or floods its output is a recorded failure of that artifact, never of the run.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from challenges.framework.api import ScoreContext
from challenges.framework.processes import kill_group, start_group, stop_group
from challenges.framework.score_sandbox import bwrap_works, sandboxed_argv, scorer_env
from challenges.framework.spec import Challenge
from challenges.framework.split import split_scores
from checkpoints import beneath
from checkpoints.atomic import atomic_write_json

LOG_HEAD_BYTES = 256 * 1024
LOG_TAIL_BYTES = 64 * 1024


@dataclass
class Evaluation:
    """One harness scoring of one artifact, as saved in evaluations/<id>.json."""

    id: str
    challenge: str
    preset: str
    artifact: str  # the path the agent named
    sha256: str  # of the frozen copy, which is what was scored and what is submitted
    ok: bool
    score: float | None  # the dev score: the only score agents see, and what they and the ledger rank by
    metric: dict[str, str]
    details: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    error: str = ""
    timed_out: bool = False
    log: str = ""
    started_at: str = ""
    duration_s: float = 0.0
    frozen: str = ""  # evaluations/<id>.frozen/<name>: a read-only copy made before scoring
    # What the crew knows of it as an experiment: hypothesis, parent, kind, commit, job, command, lesson.
    experiment: dict[str, Any] = field(default_factory=dict)
    # Never shown to agents: the held-out part's score (None without per-item results), the scorer's value on
    # the whole set, and how the split went (challenges/framework/split.py; with a split, the scorer's own details too).
    heldout_score: float | None = None
    full_score: float | None = None
    split: dict[str, Any] = field(default_factory=dict)
    sandboxed: bool = False  # whether the scorer ran in its own sandbox (challenges/framework/score_sandbox.py)

    @property
    def full(self) -> float | None:
        """The scorer's value on the whole set (records made before the split: their one score)."""
        return self.full_score if self.full_score is not None else self.score

    @property
    def submission_path(self) -> Path:
        return Path(self.frozen or self.artifact)

    @classmethod
    def load(cls, path: Path) -> Evaluation:
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))


def evaluate(
    challenge: Challenge, artifact: Path, ctx: ScoreContext, evaluations_dir: Path, timeout_s: float | None = None,
    eval_id: str | None = None, root: Path | None = None, sandboxed: bool | None = None,
) -> Evaluation:
    """Score `artifact` with the challenge's scorer and save the record; never raises for scorer faults.
    `eval_id` names a record outside the numbered sequence (the crew's floor is eval-0000).
    With `root` (an agent's workspace), `artifact` is a path beneath it that is opened without following links
    (freeze); otherwise the caller trusts the path. The scorer runs in its own sandbox (score_sandbox.py)
    wherever bubblewrap works, unless `sandboxed` says otherwise (benchmarks/scoring_sandbox.py compares)."""
    evaluations_dir = Path(evaluations_dir)
    evaluations_dir.mkdir(parents=True, exist_ok=True)
    started, t0 = datetime.now(UTC), time.monotonic()
    eval_id, log_path = _reserve_id(evaluations_dir, eval_id)
    named = Path(root) / artifact if root is not None else Path(artifact).resolve()
    record = Evaluation(
        id=eval_id, challenge=challenge.name, preset=ctx.preset, artifact=str(named), sha256="", ok=False,
        score=None, metric={"name": challenge.metric.name, "direction": challenge.metric.direction},
        log=str(log_path), started_at=started.isoformat(timespec="seconds"),
    )
    try:
        frozen = freeze(named if root is None else Path(artifact), evaluations_dir / f"{eval_id}.frozen", root)
    except FileNotFoundError:
        record.error = f"artifact {artifact} does not exist"
    except FreezeRefused as err:
        record.error = f"artifact refused: {err}"
    else:
        record.frozen, record.sha256 = str(frozen), artifact_sha256(frozen)
        record.sandboxed = bwrap_works() if sandboxed is None else sandboxed
        record = _run_scorer(record, challenge, frozen, ctx, log_path, timeout_s or ctx.time_limit_s)
    if not record.frozen:
        log_path.write_text(record.error + "\n", encoding="utf-8")
    record.duration_s = round(time.monotonic() - t0, 3)
    atomic_write_json(evaluations_dir / f"{eval_id}.json", asdict(record))
    return record


def load_evaluations(evaluations_dir: Path) -> list[Evaluation]:
    """Every saved record, oldest first."""
    folder = Path(evaluations_dir)
    if not folder.is_dir():
        return []
    return [Evaluation.load(path) for path in sorted(folder.glob("eval-*.json"))]


def release_unfinished(evaluations_dir: Path) -> list[str]:
    """After a crash: end scorers still running for a dead run and free their ids (a log without a record),
    so the evaluation can be made again under the same id. Returns the ids freed."""
    freed = []
    for log_path in Path(evaluations_dir).glob("eval-*.log"):
        if log_path.with_suffix(".json").exists():
            continue
        pid_file = log_path.with_suffix(".pid")
        if pid_file.is_file():
            pid, started = pid_file.read_text().split()
            if _start_time(int(pid)) == started:
                kill_group(int(pid))
            pid_file.unlink()
        log_path.unlink()
        freed.append(log_path.stem)
    return sorted(freed)


def _start_time(pid: int) -> str:
    import psutil

    try:
        return f"{psutil.Process(pid).create_time():.2f}"
    except psutil.NoSuchProcess:
        return "gone"


def _reserve_id(evaluations_dir: Path, fixed: str | None = None) -> tuple[str, Path]:
    """The next id (eval-0001, eval-0002, ...): readable, and the same when a run is replayed. Creating
    its log file exclusively reserves it, so two evaluations at once never share an id."""
    if fixed is not None:
        log_path = evaluations_dir / f"{fixed}.log"
        with open(log_path, "x"):
            return fixed, log_path
    while True:
        taken = [int(p.stem.split("-")[1]) for p in evaluations_dir.glob("eval-*.log") if p.stem[5:].isdigit()]
        eval_id = f"eval-{max(taken, default=0) + 1:04d}"
        log_path = evaluations_dir / f"{eval_id}.log"
        try:
            with open(log_path, "x"):
                return eval_id, log_path
        except FileExistsError:
            continue


def best_evaluation(evaluations: list[Evaluation], challenge: Challenge) -> Evaluation | None:
    best = None
    for record in evaluations:
        if record.ok and record.score is not None:
            if best is None or challenge.metric.better(record.score, best.score):
                best = record
    return best


class FreezeRefused(Exception):
    """The artifact holds something a frozen copy must not: a link, a special file, an outside hard link."""


def freeze(artifact: Path, folder: Path, root: Path | None = None) -> Path:
    """A read-only copy of the artifact as it is now (a file, or a folder's files), in `folder`: the scorer
    scores it and the run submits it, so what is submitted is what was scored even if the agents go on
    writing to the original. `artifact` is relative to `root` when given (an agent's workspace): it is then
    opened beneath it once, without following any link, and copied from that one opening, so a folder swapped
    for a symlink meanwhile changes nothing. Symlinks, special files and files hard-linked from outside the
    artifact are refused (FreezeRefused). A copy, not a hard link: a link would follow in-place writes; the
    kernel shares the blocks where the file system can (btrfs, XFS reflinks), so a frozen model costs no disk."""
    root = root or Path(os.path.abspath(artifact)).parent
    rel = Path(artifact).relative_to(root) if Path(artifact).is_absolute() else Path(artifact)
    folder.mkdir(parents=True, exist_ok=True)
    frozen = folder / (rel.name or Path(root).name)
    inodes: dict[tuple[int, int], list[int]] = {}  # (dev, inode) -> [links seen inside, links in all]
    try:
        with beneath.parent_dir(root, rel) as (dir_fd, name):
            _freeze_entry(dir_fd, name, frozen, inodes, str(rel))
        outside = [n for n, (seen, total) in inodes.items() if total > seen]
        if outside:
            raise FreezeRefused(f"{len(outside)} file(s) in '{rel}' are hard links to files outside it; "
                                "copy them instead (cp, not ln)")
    except (FreezeRefused, beneath.LinkRefused) as err:
        if frozen.is_dir():
            shutil.rmtree(frozen, ignore_errors=True)
        else:
            frozen.unlink(missing_ok=True)
        raise FreezeRefused(str(err).split("] ")[-1]) from None
    return frozen


def _freeze_entry(dir_fd: int, name: str, dest: Path, inodes: dict, shown: str) -> None:
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        raise FreezeRefused(f"'{shown}' is a symbolic link; an artifact must hold real files (copy them in)")
    if stat.S_ISDIR(info.st_mode):
        sub = beneath.open_dir_at(dir_fd, name)
        try:
            dest.mkdir()
            for entry in sorted(os.listdir(sub)):
                _freeze_entry(sub, entry, dest / entry, inodes, f"{shown}/{entry}")
        finally:
            os.close(sub)
        os.chmod(dest, 0o555)
        return
    if not stat.S_ISREG(info.st_mode):
        raise FreezeRefused(f"'{shown}' is a special file (a pipe, socket or device); an artifact holds files")
    src = beneath.open_file(dir_fd, name)
    try:
        opened = os.fstat(src)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise FreezeRefused(f"'{shown}' changed while it was frozen; evaluate it again once it is written")
        if opened.st_nlink > 1:
            seen = inodes.setdefault((opened.st_dev, opened.st_ino), [0, opened.st_nlink])
            seen[0] += 1
        with open(dest, "xb") as out:
            beneath.copy_contents(src, out.fileno())
    finally:
        os.close(src)
    os.chmod(dest, (info.st_mode & 0o555) | 0o444)
    os.utime(dest, ns=(info.st_atime_ns, info.st_mtime_ns))


def frozen_intact(record: Evaluation) -> bool:
    """Whether the record's frozen copy still has the hash it was scored with."""
    path = record.submission_path
    return path.exists() and artifact_sha256(path) == record.sha256


def artifact_sha256(path: Path) -> str:
    """Content hash of a file, or of a folder's files and their relative paths."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def _run_scorer(record: Evaluation, challenge: Challenge, artifact: Path, ctx: ScoreContext,
                log_path: Path, timeout_s: float) -> Evaluation:
    # A fresh scratch per scoring, and a folder of the crew's own for the context, the result and a partial
    # score: with the sandbox, the scorer sees only these two writable (score_sandbox.py).
    io_dir, scratch = log_path.with_suffix(".io"), Path(ctx.scratch_dir) / record.id
    for folder in (io_dir, scratch):  # an id freed after a crash is used again
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    ctx = replace(ctx, challenge_dir=challenge.directory, time_limit_s=timeout_s, scratch_dir=scratch,
                  partial_file=io_dir / "partial.json")
    ctx_file, result_file = io_dir / "ctx.json", io_dir / "result.json"
    ctx_file.write_text(ctx.to_json(), encoding="utf-8")
    tail = [str(challenge.directory), str(artifact), str(ctx_file), str(result_file)]
    if record.sandboxed:
        argv = sandboxed_argv(read_only=[challenge.directory, ctx.data_dir, ctx.private_dir, artifact.parent],
                              writable=[scratch, io_dir], argv_tail=tail, gpus=ctx.device.startswith("cuda"))
        env = scorer_env(os.environ, scratch)
    else:
        argv, env = [sys.executable, "-m", "challenges.framework._score_runner", *tail], None
    with open(log_path, "wb") as log:
        proc = start_group(argv, scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        # The scorer runs in its own session, so it outlives a killed run: its pid lets a resume end it.
        pid_file = log_path.with_suffix(".pid")
        pid_file.write_text(f"{proc.pid} {_start_time(proc.pid)}")
        pump = threading.Thread(target=_pump_capped, args=(proc.stdout, log), daemon=True)
        pump.start()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            record.timed_out = True
        stop_group(proc)  # also reaps helpers a finished scorer left behind, which would hold the pipe
        pump.join(timeout=10)
    pid_file.unlink(missing_ok=True)
    if record.timed_out:
        record.error = f"scorer exceeded its time limit of {timeout_s:.0f}s and was stopped"
    elif result_file.is_file():
        return _read_result(record, result_file, proc.returncode, challenge.metric.sentinels)
    else:
        record.error = f"scorer process exited with code {proc.returncode} without a result; see the log"
    return _partial(record, ctx.partial_file)


def _partial(record: Evaluation, partial_file: Path) -> Evaluation:
    """A scorer stopped before it returned keeps the score it reported as partial, if it reported one."""
    if not partial_file.is_file():
        return record
    partial = json.loads(partial_file.read_text(encoding="utf-8"))
    value = partial.get("score")
    if value is None or not math.isfinite(value):
        return record
    record.ok, record.score = True, float(value)
    record.details = {**partial.get("details", {}), "partial": f"{record.error}; this is the score it reported "
                                                              "before (ScoreContext.report_partial)"}
    record.error = ""
    return _apply_split(record, float(value), None)


def score_violation(value: Any, sentinels: tuple[float, ...] = ()) -> str | None:
    """Why a scorer's value is no score: missing, not finite, or a sentinel the challenge declares for "could not
    score" (a finite 1e10 on any error would otherwise be recorded, and ranked, as a real score)."""
    if value is None or not isinstance(value, int | float) or not math.isfinite(value):
        return f"scorer returned a non-finite score {value!r}"
    if float(value) in sentinels:
        return f"scorer returned {value!r}, the challenge's sentinel for a submission it could not score"
    return None


def _read_result(record: Evaluation, result_file: Path, returncode: int, sentinels: tuple[float, ...] = ()
                 ) -> Evaluation:
    result = json.loads(result_file.read_text(encoding="utf-8"))
    record.violations = result.get("violations", [])
    record.details = result.get("details", {})
    record.error = result.get("error", "")
    value = result.get("score")
    if not record.violations and "error" not in result and (why := score_violation(value, sentinels)):
        record.violations = [why]
    if record.violations:
        record.error = record.error or f"{len(record.violations)} rule violation(s)"
    elif value is None or not math.isfinite(value):
        record.error = record.error or f"scorer returned a non-finite score {value!r}"
    else:
        record.ok = True
        return _apply_split(record, float(value), result.get("items"))
    return record


def _apply_split(record: Evaluation, value: float, items: Any) -> Evaluation:
    """Dev, held-out and full scores from the scorer's value and per-item results. With a split, the details
    agents see have the dev part's per-group scores in place of the scorer's whole-set `per_task` figures,
    which next to the dev score would give the held-out score away; the scorer's own are kept in `split`."""
    split = split_scores(value, items)
    record.score, record.heldout_score, record.full_score = split.dev, split.heldout, split.full
    record.split = split.to_dict()
    if split.heldout is not None:
        record.split["scorer_details"] = record.details
        record.details = {**{k: v for k, v in record.details.items() if k != "per_task"},
                          "dev_items": split.dev_items,
                          "dev_per_group": {g: v["dev"] for g, v in split.per_group.items()}}
    return record


def _pump_capped(stream: BinaryIO, log: BinaryIO) -> None:
    """Copy the scorer's output to the log: the head in full, then only the tail; memory stays flat."""
    written, cut = 0, 0
    tail: collections.deque[bytes] = collections.deque()
    tail_size = 0
    for chunk in iter(lambda: stream.read1(65536), b""):
        if written < LOG_HEAD_BYTES:
            keep = chunk[: LOG_HEAD_BYTES - written]
            log.write(keep)
            written += len(keep)
            chunk = chunk[len(keep):]
        if chunk:
            tail.append(chunk)
            tail_size += len(chunk)
            while tail_size - len(tail[0]) >= LOG_TAIL_BYTES:
                cut += len(tail[0])
                tail_size -= len(tail.popleft())
    if cut:
        log.write(f"\n[... {cut} bytes of scorer output cut ...]\n".encode())
    log.writelines(tail)
    log.flush()
