"""Downloading what a preset needs from the Hugging Face Hub, with errors that name the repository and the fix.

A challenge's prepare.py declares its sources per preset (`SOURCES = {"full": Sources(...)}`): `doctor` and
`run` check them through the hub's metadata before anything is downloaded, and prepare fetches them with
`fetch_model` and `fetch_dataset`. Datasets come as parquet files read with pyarrow (no dataset scripts,
which the datasets library no longer runs); models come as their config, tokenizer and safetensors files,
written once into the data folder (no second copy in a cache).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.api import row_limit
from challenges.lib.hub_access import (
    HubDataset,
    HubModel,
    HubUnavailable,
    RepoReport,
    explain,
    inspect_dataset,
    inspect_model,
)

log = logging.getLogger(__name__)

__all__ = ["HubDataset", "HubModel", "HubUnavailable", "Sources", "fetch_dataset", "fetch_model", "read_rows"]

# A model's config, tokenizer and weights; top-level files only (no original/ checkpoints or other formats).
MODEL_FILES = ("*.json", "*.safetensors", "tokenizer*", "*.model", "*.tiktoken", "merges.txt", "vocab.txt")
PICKLED_WEIGHTS = ("pytorch_model*.bin",)
DISK_MARGIN = 1.05


@dataclass(frozen=True)
class Sources:
    """Everything a preset takes from the hub, so that it can be checked before preparing."""

    models: tuple[HubModel, ...] = ()
    datasets: tuple[HubDataset, ...] = ()
    lm_eval_tasks: tuple[str, ...] = ()


def model_report(model: HubModel) -> RepoReport:
    """The model's metadata and the files fetch_model would download (pickled weights only without safetensors)."""
    report = inspect_model(model, MODEL_FILES)
    if any(name.endswith(".safetensors") for name in report.files):
        return report
    with_pickles = inspect_model(model, MODEL_FILES + PICKLED_WEIGHTS)
    if not any(name.endswith(".bin") for name in with_pickles.files):
        raise HubUnavailable(f"model '{model.repo}' (revision {model.revision}) has no weights in a format "
                             "transformers loads here (safetensors, or pytorch_model*.bin)",
                             "choose a revision or a copy of the model with safetensors weights", "files")
    with_pickles.notes.append("no safetensors weights: the .bin weights are converted at prepare time")
    return with_pickles


def fetch_model(model: HubModel, out_dir: Path) -> Path:
    """Download the model's config, tokenizer and weights into `out_dir` (a Hugging Face model folder).

    Weights stored only as pickled .bin files are converted to safetensors, so that every check reads them
    without loading. Raises HubUnavailable naming the repository and the fix.
    """
    report = model_report(model)
    _download(report, out_dir)
    if not any(Path(out_dir).glob("*.safetensors")):
        _convert_to_safetensors(Path(out_dir))
    return Path(out_dir)


def fetch_dataset(dataset: HubDataset, out_dir: Path) -> list[Path]:
    """Download the dataset's files matching its patterns into `out_dir`; return their paths, sorted."""
    report = inspect_dataset(dataset)
    _download(report, out_dir)
    return sorted(Path(out_dir) / name for name in report.files)


def read_rows(files: Sequence[Path], columns: Sequence[str] | None = None,
              limit: int | None = None) -> Iterator[dict]:
    """The rows of parquet files, in order, as dicts; at most `limit` (or RESEARCH_CREW_ROW_LIMIT) rows."""
    import pyarrow.parquet as pq

    cap = min(x for x in (limit, row_limit(), float("inf")) if x is not None)
    count = 0
    for file in files:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=4096, columns=list(columns) if columns else None):
            for row in batch.to_pylist():
                if count >= cap:
                    return
                yield row
                count += 1


def _download(report: RepoReport, out_dir: Path) -> None:
    from huggingface_hub import snapshot_download

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(out_dir).free
    if report.download_bytes * DISK_MARGIN > free:
        raise HubUnavailable(
            f"{report.kind} '{report.repo}' needs {report.download_bytes / 1e9:.1f} GB and {out_dir} has "
            f"{free / 1e9:.1f} GB free", "free disk space, or point RESEARCH_CREW_CACHE at a larger disk", "disk")
    log.info("downloading %s %s (%d files, %.2f GB)", report.kind, report.repo, len(report.files),
             report.download_bytes / 1e9)
    try:
        # The commit the metadata named: every file comes from one revision, even if the branch moves meanwhile.
        snapshot_download(report.repo, repo_type=report.kind, revision=report.sha or report.revision,
                          allow_patterns=list(report.files), local_dir=out_dir)
    except Exception as err:
        raise explain(err, report.repo, report.kind, report.revision) from err
    shutil.rmtree(out_dir / ".cache", ignore_errors=True)  # the client's resume metadata, done with


def _convert_to_safetensors(folder: Path) -> None:
    """Load a folder with pickled weights (on the CPU) and save it back with safetensors only."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    config = AutoConfig.from_pretrained(folder)
    loader = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    model = loader.from_pretrained(folder, dtype="auto")
    for pickled in folder.glob("pytorch_model*"):
        pickled.unlink()
    model.save_pretrained(folder, safe_serialization=True)
