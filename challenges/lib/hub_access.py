"""What the Hugging Face Hub says about a model or dataset before anything is downloaded.

Metadata calls only (repository info with file sizes, and an access check for gated repositories), so
`doctor` and `run` can say in seconds whether preparing a preset will work, and prepare can fail with a
sentence that names the repository and the fix instead of a traceback: a dataset that is only a loading
script, a gated repository, a missing revision, a missing repository, no network.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime

from challenges.framework.api import DatasetUnavailable

log = logging.getLogger(__name__)

DATA_SUFFIXES = (".parquet", ".arrow", ".json", ".jsonl", ".csv", ".tsv", ".txt", ".json.gz", ".jsonl.gz", ".zst")
OFFLINE_HINT = "to try research-crew offline use --preset smoke"


class HubUnavailable(DatasetUnavailable):
    """A repository cannot be used; `reason` is one of: script, gated, revision, missing, network, offline,
    files, rule."""

    def __init__(self, message: str, hint: str, reason: str) -> None:
        super().__init__(message, hint)
        self.reason = reason


@dataclass(frozen=True)
class HubModel:
    """A model a preset downloads. `uploaded_before` (YYYY-MM-DD) and `max_parameters` are rules the hub's
    metadata is checked against (MLRB's merging rules, for example)."""

    repo: str
    revision: str = "main"
    uploaded_before: str | None = None
    max_parameters: int | None = None

    kind = "model"


@dataclass(frozen=True)
class HubDataset:
    """A dataset a preset downloads: the repository files matching `files` (globs, e.g. "data/train-*.parquet")
    at `revision` ("refs/convert/parquet" holds the hub's parquet conversion of any dataset). Without `files`
    the repository is only checked (lm-eval loads it itself)."""

    repo: str
    files: tuple[str, ...] = ()
    revision: str = "main"

    kind = "dataset"


@dataclass(frozen=True)
class RepoReport:
    """The metadata of one repository at one revision, and the files a preset takes from it."""

    repo: str
    kind: str
    revision: str
    sha: str
    files: dict[str, int]  # path -> size in bytes, of the files that would be downloaded
    gated: bool = False
    created_at: datetime | None = None
    parameters: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def download_bytes(self) -> int:
        return sum(self.files.values())


def repo_url(repo: str, kind: str) -> str:
    return f"https://huggingface.co/{'datasets/' if kind == 'dataset' else ''}{repo}"


def inspect_model(model: HubModel, patterns: tuple[str, ...]) -> RepoReport:
    """The model's metadata and the files matching `patterns` (top-level files only); HubUnavailable if the
    model cannot be downloaded or breaks one of its rules."""
    info = _info(model.repo, "model", model.revision)
    files = _matching(info.siblings or [], patterns)
    safetensors = getattr(info, "safetensors", None)
    report = RepoReport(model.repo, "model", model.revision, info.sha or "", files, gated=bool(info.gated),
                        created_at=info.created_at, parameters=getattr(safetensors, "total", None))
    _check_access(report)
    _check_rules(model, report)
    return report


def inspect_dataset(dataset: HubDataset) -> RepoReport:
    """The dataset's metadata and the files matching its patterns; HubUnavailable if they cannot be had."""
    info = _info(dataset.repo, "dataset", dataset.revision)
    siblings = info.siblings or []
    names = [s.rfilename for s in siblings]
    files = _matching(siblings, dataset.files, top_level_only=False) if dataset.files else {}
    report = RepoReport(dataset.repo, "dataset", dataset.revision, info.sha or "", files, gated=bool(info.gated),
                        created_at=info.created_at)
    scripts = [n for n in names if n.endswith(".py") and "/" not in n]
    has_data = any(n.endswith(DATA_SUFFIXES) for n in names)
    if scripts and not has_data:
        raise HubUnavailable(
            f"dataset '{dataset.repo}' (revision {dataset.revision}) is only a loading script ({scripts[0]}), which "
            "the datasets library no longer runs (4.0 removed dataset scripts)",
            f"use its parquet conversion instead: revision 'refs/convert/parquet' (files <config>/<split>/*.parquet, "
            f"listed at {repo_url(dataset.repo, 'dataset')}/tree/refs%2Fconvert%2Fparquet), or a parquet copy of it",
            "script")
    if dataset.files and not files:
        raise HubUnavailable(
            f"dataset '{dataset.repo}' (revision {dataset.revision}) has no file matching {list(dataset.files)}; "
            f"it holds e.g. {names[:6]}",
            "correct the file patterns (or the revision) in the challenge's prepare.py SOURCES", "files")
    _check_access(report)
    return report


def explain(err: Exception, repo: str, kind: str, revision: str) -> HubUnavailable:
    """A hub client error as a HubUnavailable that names the repository and the fix."""
    from huggingface_hub.errors import (
        GatedRepoError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    url, label = repo_url(repo, kind), f"{kind} '{repo}'"
    if isinstance(err, HubUnavailable):
        return err
    if isinstance(err, GatedRepoError):
        return HubUnavailable(
            f"{label} is gated: its files are only for accounts that accepted its terms",
            f"accept the terms at {url} while logged in, then set HF_TOKEN to a token of that account "
            "(huggingface.co/settings/tokens); or choose an ungated model", "gated")
    if isinstance(err, RevisionNotFoundError):
        return HubUnavailable(
            f"{label} has no revision '{revision}'",
            f"use a branch, tag or commit that exists (see {url}/tree/main and its branches), or update the "
            "challenge's prepare.py SOURCES", "revision")
    if isinstance(err, RepositoryNotFoundError):
        token = " (HF_TOKEN is set: does that account have access?)" if os.environ.get("HF_TOKEN") else ""
        return HubUnavailable(
            f"{label} was not found on the hub{token}",
            f"check the id at {url}; if the repository is private, set HF_TOKEN to a token that can read it", "missing")
    if isinstance(err, OfflineModeIsEnabled):
        return HubUnavailable(
            f"cannot reach {label}: the hub client is in offline mode (HF_HUB_OFFLINE is set)",
            f"unset HF_HUB_OFFLINE (and HF_DATASETS_OFFLINE) on a machine with internet; {OFFLINE_HINT}", "offline")
    if _is_network_error(err):
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
        return HubUnavailable(
            f"cannot reach the Hugging Face Hub ({endpoint}) for {label}: the machine looks offline "
            f"({type(err).__name__}: {str(err)[:160]})",
            f"connect this machine to the internet (or a mirror through HF_ENDPOINT); {OFFLINE_HINT}", "network")
    return HubUnavailable(f"the hub refused {label} at revision '{revision}' ({type(err).__name__}: "
                          f"{str(err)[:200]})", f"check {url} and try again later", "network")


def _is_network_error(err: BaseException) -> bool:
    """Connection failures, whatever HTTP library the hub client uses (httpx, httpx2, requests)."""
    while err is not None:
        names = {cls.__name__ for cls in type(err).__mro__}
        if isinstance(err, ConnectionError | TimeoutError) or names & {"TransportError", "ConnectError",
                                                                       "TimeoutException", "ConnectionError"}:
            return True
        err = err.__cause__ or err.__context__
    return False


def _info(repo: str, kind: str, revision: str):
    from huggingface_hub import HfApi

    api = HfApi()
    try:
        if kind == "model":
            return api.model_info(repo, revision=revision, files_metadata=True)
        return api.dataset_info(repo, revision=revision, files_metadata=True)
    except Exception as err:  # every hub failure becomes a sentence naming the repository and the fix
        raise explain(err, repo, kind, revision) from err


def _check_access(report: RepoReport) -> None:
    """A gated repository answers its metadata to anyone; only the access check says whether files would come."""
    if not report.gated:
        return
    from huggingface_hub import HfApi

    try:
        HfApi().auth_check(report.repo, repo_type=report.kind)
    except Exception as err:
        raise explain(err, report.repo, report.kind, report.revision) from err
    report.notes.append("gated: this token has access")


def _check_rules(model: HubModel, report: RepoReport) -> None:
    url = repo_url(model.repo, "model")
    if model.uploaded_before and report.created_at:
        limit = datetime.fromisoformat(model.uploaded_before).replace(tzinfo=UTC)
        if report.created_at >= limit:
            raise HubUnavailable(
                f"model '{model.repo}' was uploaded on {report.created_at:%Y-%m-%d}, not before "
                f"{model.uploaded_before} as the challenge's rules require", f"choose a model uploaded earlier "
                f"({url})", "rule")
    if model.max_parameters and report.parameters and report.parameters > model.max_parameters:
        raise HubUnavailable(
            f"model '{model.repo}' has {report.parameters:,} parameters, over the challenge's limit of "
            f"{model.max_parameters:,}", "choose a smaller model", "rule")
    if not report.files:
        raise HubUnavailable(f"model '{model.repo}' (revision {model.revision}) has no config and weight files",
                             f"check the id and revision at {url}", "files")


def _matching(siblings, patterns: tuple[str, ...], top_level_only: bool = True) -> dict[str, int]:
    chosen = {}
    for sibling in siblings:
        name = sibling.rfilename
        if top_level_only and "/" in name:
            continue
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            size = sibling.size if sibling.size is not None else getattr(sibling.lfs, "size", 0)
            chosen[name] = int(size or 0)
    return chosen
