"""`Toolkit`: the worker's tools bound to one run. Its public methods are the tools the model calls."""

from __future__ import annotations

import functools
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolkit.commands import CommandResult, new_log_path, run_command
from toolkit.env import scrubbed_env
from toolkit.errors import ToolkitError
from toolkit.files import FileTools
from toolkit.gpus import gpu_status as _gpu_status
from toolkit.jobs import JobManager, JobRefused, JobStatus
from toolkit.paths import DATA_DIR, PathRefused
from toolkit.sandbox import Sandbox, SandboxPolicy
from toolkit.search_arxiv import ArxivTools
from toolkit.search_github import GithubTools

log = logging.getLogger(__name__)



def _os_errors_as_text(tool: Callable[..., Any]) -> Callable[..., Any]:
    """A failing file system (full disk, a file where a folder should be) is an observation for the
    model, not an exception that ends the step."""

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except OSError as err:
            log.warning("%s failed: %r", tool.__name__, err)
            where = f" ({args[0].shown(err.filename)})" if err.filename else ""
            return f"{tool.__name__} failed: {err.strerror or err}{where}"

    return wrapper


@runtime_checkable
class PhaseClock(Protocol):
    """Anything that can say how many seconds a command may use now (the run's clock: to the end of its phase)."""

    def phase_left_s(self) -> float: ...


class Toolkit:
    """The tools of one run: commands and files in `workspace`, jobs in `run_dir/jobs`, logs in
    `run_dir/logs`. Every timeout and job deadline is capped by `clock` when one is given.

    `data_dir` is shown read-only at workspace/data. With a `sandbox` policy every command and job runs
    inside bubblewrap (toolkit.sandbox); without one they run as the user, unconfined. `env` is what the
    challenge's preset declares for them (validated there: no secret, no name the toolkit manages)."""

    def __init__(
        self,
        run_dir: Path,
        *,
        workspace: Path | None = None,
        clock: PhaseClock | None = None,
        read_only: Sequence[Path] = (),
        data_dir: Path | None = None,
        sandbox: SandboxPolicy | None = None,
        max_output_chars: int = 10_000,
        command_grace_s: float = 2.0,
        job_grace_s: float = 30.0,
        cache_dir: Path | None = None,
        arxiv: ArxivTools | None = None,
        github: GithubTools | None = None,
        devices: Sequence[str] = (),
        slurm_partition: str | bool | None = False,
        slurm_max_jobs: int = 4,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.run_dir = Path(run_dir).absolute()
        self.workspace = Path(workspace).absolute() if workspace else self.run_dir / "workspace"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.log_dir = self.run_dir / "logs"
        self.clock = clock
        self.max_output_chars = max_output_chars
        self.command_grace_s = command_grace_s
        self.data_dir = Path(data_dir).absolute() if data_dir else None
        self.declared_env = dict(env or {})  # what the preset declares for the agents' commands and jobs
        if self.data_dir is not None:
            place_data(self.workspace / DATA_DIR, self.data_dir, bound=sandbox is not None)
        # Papers live in a folder of the crew's, shown read-only at workspace/papers: the crew writes there on
        # the host, so no agent may plant a link in it.
        self.papers_dir = self.run_dir / "papers"
        self.papers_dir.mkdir(parents=True, exist_ok=True)
        self.sandbox = None if sandbox is None else Sandbox(sandbox, run_dir=self.run_dir, workspace=self.workspace,
                                                            data_dir=self.data_dir, papers_dir=self.papers_dir)
        if self.sandbox is not None:
            self.sandbox.check(os.environ)
        mounts = {"papers": self.papers_dir, **({DATA_DIR: self.data_dir} if self.data_dir is not None else {})}
        seen_as = None if self.sandbox is None else self.sandbox.inside(self.workspace)
        self.files = FileTools(self.workspace, read_only, mounts, seen_as=seen_as)
        if slurm_partition is False:
            self.jobs = JobManager(self.run_dir / "jobs", cwd=self.workspace, env=self._env(), grace_s=job_grace_s,
                                   sandbox=self.sandbox, devices=devices)
        else:  # each job a SLURM batch job (slurm_partition None: the cluster's default partition)
            from toolkit.slurm_jobs import SlurmJobManager

            self.jobs = SlurmJobManager(self.run_dir / "jobs", cwd=self.workspace, env=self._env(),
                                        grace_s=job_grace_s, sandbox=self.sandbox, partition=slurm_partition or None,
                                        max_jobs=slurm_max_jobs)
        cache = cache_dir or self.run_dir / "cache"
        self.arxiv = arxiv or ArxivTools(cache, self.papers_dir)
        self.github = github or GithubTools(cache)

    # -- plumbing (not tools) ----------------------------------------------------------------------

    def phase_left_s(self) -> float:
        return self.clock.phase_left_s() if self.clock is not None else math.inf

    def _env(self) -> dict[str, str]:
        # Unbuffered Python so logs (and tail_job) show output as it happens; `python` is the crew's own
        # interpreter, which has torch, transformers and checkpoints.training.
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        # Idle OpenMP threads that spin starve everything else on a shared CPU (100x slower seen here).
        extra = {"PYTHONUNBUFFERED": "1", "PATH": path, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        env = scrubbed_env(extra=extra)
        env = env if self.sandbox is None else self.sandbox.environment(env)
        return {**env, **self.declared_env}

    def _bounded(self, timeout_s: float) -> tuple[float, str]:
        left = self.phase_left_s()
        if timeout_s > left:
            return max(left, 0.0), f" (timeout cut from {timeout_s:g}s to the {left:.0f}s the run's budget has left)"
        return timeout_s, ""

    def _run(self, argv: list[str], display: str, timeout_s: float, kind: str) -> CommandResult | str:
        if not timeout_s or timeout_s <= 0:
            return "timeout_s must be a positive number of seconds."
        timeout, note = self._bounded(timeout_s)
        if timeout <= 0:
            return "Not run: the run's time budget is spent."
        result = run_command(
            argv if self.sandbox is None else self.sandbox.wrap(argv),
            cwd=self.workspace,
            env=self._env(),
            timeout_s=timeout,
            log_path=new_log_path(self.log_dir, kind),
            max_chars=self.max_output_chars,
            grace_s=self.command_grace_s,
            display=display,
            contained=self.sandbox is not None,
        )
        result.log_shown = self.shown(result.log_path)
        if note:
            result.output = f"[note{note}]\n{result.output}"
        return result

    def shown(self, path: str | bytes | os.PathLike[str]) -> str:
        """A path as the agents see it: workspace-relative where it can be, else its path inside the sandbox."""
        where = Path(os.fsdecode(path))
        if where.is_absolute() and (where == self.workspace or self.workspace in where.parents):
            return str(where.relative_to(self.workspace))
        return self.jobs.shown(where)

    # -- commands ----------------------------------------------------------------------------------

    @_os_errors_as_text
    def run_bash(self, command: str, timeout_s: float = 600) -> CommandResult | str:
        """Run a bash command in the workspace and wait for it (at most timeout_s seconds).

        Use for short things: installs, inspection, quick scripts, evaluations. For anything that may
        run longer than a few minutes (training), use start_job instead. At the timeout the command and
        everything it started are killed; what it leaves running in the background ends when it returns.
        Output (stdout and stderr together) is saved to a log file; you see the head and the tail and how
        much was cut. No API keys or tokens are in the environment.
        """
        return self._run(["bash", "-c", command], command, timeout_s, "bash")

    @_os_errors_as_text
    def run_python(self, path: str, args: list[str] | None = None, timeout_s: float = 600) -> CommandResult | str:
        """Run a Python script from the workspace with the crew's Python: `python <path> <args...>`.

        path is relative to the workspace; args are passed as separate arguments (no shell quoting).
        Same limits and output handling as run_bash.
        """
        try:
            real = self.files.confine.resolve(path)
        except PathRefused as err:
            return f"Refused: {err}"
        if not real.is_file():
            return f"'{path}' is not a file in the workspace."
        args = [str(a) for a in (args or [])]
        display = " ".join(["python", path, *args])
        relative = self.files.confine.display(real)  # the data folder has this path in the sandbox
        inside = (self.workspace if self.sandbox is None else self.sandbox.inside(self.workspace)) / relative
        return self._run([sys.executable, str(inside), *args], display, timeout_s, "python")

    # -- background jobs ---------------------------------------------------------------------------

    @_os_errors_as_text
    def start_job(self, command: str, name: str, timeout_s: float | None = None,
                  gpus: int | None = None) -> JobStatus | str:
        """Start a long-running bash command (e.g. training) in the background and return at once.

        name is a short label (e.g. "train-gpt-small"). The job keeps running after this call; check it
        with job_status / tail_job, stop it with stop_job. It is stopped automatically at timeout_s (if
        given) or when the run's budget ends, whichever is first: it gets SIGTERM a grace period before
        that deadline, so save checkpoints regularly and save on SIGTERM. Print `progress: <done>/<total>`
        lines (or use tqdm) to get progress and ETA. gpus: how many free GPUs it gets as its
        CUDA_VISIBLE_DEVICES (default one when the run has GPUs); gpu_status shows which are free.
        """
        limit = min(timeout_s if timeout_s and timeout_s > 0 else math.inf, self.phase_left_s())
        if limit <= 0:
            return "Not started: the run's time budget is spent."
        deadline = None if math.isinf(limit) else time.time() + limit
        try:
            status = self.jobs.start(command, name, deadline, gpus)
        except JobRefused as err:  # the GPUs busy, or (SLURM) the run's jobs at --max-jobs
            return f"Not started: {err.message}; {err.hint}."
        if status.state == "failed":
            return f"Job {status.record.id} could not start: {status.record.end_reason}"
        return status

    @_os_errors_as_text
    def job_status(self, job_id: str) -> JobStatus | str:
        """Report a background job: running or ended (and how), runtime, deadline, progress with ETA,
        the last log line and the log path."""
        try:
            return self.jobs.status(job_id)
        except KeyError:
            return self._no_job(job_id)

    @_os_errors_as_text
    def tail_job(self, job_id: str, lines: int = 50) -> str:
        """Show the last `lines` lines (at most 500) of a background job's output."""
        try:
            return self.jobs.tail(job_id, max(1, min(lines, 500)), self.max_output_chars)
        except KeyError:
            return self._no_job(job_id)

    @_os_errors_as_text
    def stop_job(self, job_id: str) -> JobStatus | str:
        """Stop a background job gracefully: SIGTERM first (so training can save a checkpoint), then
        SIGKILL if it is still running after a grace period. Returns its final status."""
        try:
            return self.jobs.stop(job_id)
        except KeyError:
            return self._no_job(job_id)

    @_os_errors_as_text
    def list_jobs(self) -> str:
        """List this run's background jobs, one line each: id, state, runtime, progress, name."""
        ids = self.jobs.ids()
        if not ids:
            return "No background jobs yet."
        shown = ids[-50:]
        lines = [self.jobs.status(job_id).summary_line() for job_id in shown]
        head = f"{len(ids)} job(s)" + (f"; showing the latest {len(shown)}" if len(shown) < len(ids) else "")
        return head + "\n" + "\n".join(lines)

    def _no_job(self, job_id: str) -> str:
        return f"No job {job_id!r} in this run; list_jobs shows the ids."

    # -- files -------------------------------------------------------------------------------------

    @_os_errors_as_text
    def list_files(self, path: str = ".", recursive: bool = False) -> str:
        """List a folder of the workspace (sizes included). recursive=True walks subfolders, skipping
        .git, caches and virtual environments; long listings are cut and say so."""
        return self.files.list_files(path, recursive, max_entries=300)

    @_os_errors_as_text
    def read_file(self, path: str, start_line: int = 1, end_line: int | None = None) -> str:
        """Read a text file of the workspace, optionally lines start_line..end_line (1-based, inclusive).

        Lines come numbered ("  12<TAB>text"); the numbers are not part of the file. Long output is cut
        at a size cap and tells you which start_line to ask for next. The challenge data is under data/.
        """
        return self.files.read_file(path, start_line, end_line, self.max_output_chars)

    @_os_errors_as_text
    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file in the workspace with `content` (folders are created).
        data/ (the challenge data) is read-only."""
        return self.files.write_file(path, content)

    @_os_errors_as_text
    def edit_file(self, path: str, old_text: str, new_text: str) -> str:
        """Replace old_text with new_text in a workspace file. old_text must occur exactly once (same
        whitespace and indentation); otherwise nothing changes and you are told why. Returns the diff."""
        return self.files.edit_file(path, old_text, new_text, self.max_output_chars)

    @_os_errors_as_text
    def undo_edit(self, path: str) -> str:
        """Undo the last write_file or edit_file on `path` (repeatable; history is kept per file)."""
        return self.files.undo_edit(path, self.max_output_chars)

    # -- search ------------------------------------------------------------------------------------

    def search_arxiv(self, query: str, max_results: int = 10) -> str:
        """Search arXiv papers. query uses arXiv syntax, e.g. 'ti:"data pruning" AND cat:cs.LG' or
        plain words. Returns id, title, authors, date, PDF link and the abstract of each hit."""
        return self.arxiv.search(query, max_results)

    @_os_errors_as_text
    def read_arxiv_paper(self, paper_id: str) -> str:
        """Download an arXiv paper (id like 2106.09685) into workspace/papers/ and return the text of
        its first pages, cut at a size cap; the full extracted text is saved next to the PDF."""
        return self.arxiv.read_paper(paper_id, self.max_output_chars)

    def search_github(self, query: str, kind: str = "repositories", max_results: int = 10) -> str:
        """Search GitHub. kind is "repositories" (name, stars, language, description) or "code"
        (repository and file path; needs a GitHub token). query uses GitHub search syntax, e.g.
        'nanogpt language:python stars:>100'."""
        return self.github.search(query, kind, max_results)

    def read_github_file(self, repo: str, path: str, ref: str | None = None) -> str:
        """Read a file (or list a folder) from a GitHub repository: repo is 'owner/name', path is inside
        it, ref an optional branch, tag or commit. Long files are cut at a size cap."""
        return self.github.read_file(repo, path, ref, self.max_output_chars)

    # -- GPUs --------------------------------------------------------------------------------------

    def gpu_status(self) -> str:
        """Each GPU's utilisation, memory used/total, temperature and processes (marking our jobs'), and which
        of this run's GPUs are free for a new job."""
        return _gpu_status(self.jobs.running_pids()) + "\n" + self.jobs.devices_line()


def place_data(mount_point: Path, data_dir: Path, *, bound: bool) -> None:
    """workspace/data: an empty folder the sandbox binds the data over, or, with no sandbox, a symlink to it.
    Idempotent, and it turns one into the other (a run started before the sandbox existed)."""
    if bound:
        if mount_point.is_symlink():  # a run started before the sandbox, or without it
            mount_point.unlink()
        mount_point.mkdir(exist_ok=True)
        return
    if mount_point.is_symlink():
        if Path(os.readlink(mount_point)) == data_dir:
            return
        mount_point.unlink()
    elif mount_point.is_dir():
        try:
            mount_point.rmdir()  # the empty mount point of a sandboxed start
        except OSError as err:
            raise ToolkitError(f"{mount_point} is a folder with files in it, where the data link belongs",
                               "move its files elsewhere in the workspace") from err
    mount_point.symlink_to(data_dir, target_is_directory=True)
