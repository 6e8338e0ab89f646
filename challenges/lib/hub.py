"""Loading hub datasets with an error that names the dataset and what to do, instead of a traceback."""

from __future__ import annotations

import logging
from pathlib import Path

from challenges.api import DatasetUnavailable

log = logging.getLogger(__name__)


def load_hub_dataset(dataset_id: str, name: str | None = None, **kwargs):
    """`datasets.load_dataset` for a Hugging Face Hub id; network failures raise DatasetUnavailable."""
    import datasets

    label = f"{dataset_id}" + (f" ({name})" if name else "")
    log.info("loading dataset %s", label)
    try:
        return datasets.load_dataset(dataset_id, name, **kwargs)
    except (ConnectionError, OSError, TimeoutError) as err:
        raise DatasetUnavailable(
            f"could not download dataset '{label}' from the Hugging Face Hub: the machine looks offline "
            f"or the hub is unreachable ({type(err).__name__}: {str(err)[:200]})",
            "connect this machine to the internet (or fill the datasets cache beforehand and set "
            "HF_DATASETS_OFFLINE=1); to try research-crew offline use --preset smoke",
        ) from err


def fetch_hub_model(model_id: str, out_dir: Path, seq2seq: bool = False) -> Path:
    """Download a hub model and its tokenizer and save them as a local folder; offline: DatasetUnavailable."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    loader = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    log.info("loading model %s", model_id)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        model = loader.from_pretrained(model_id, dtype="auto")
    except (ConnectionError, OSError, TimeoutError) as err:
        raise DatasetUnavailable(
            f"could not download model '{model_id}' from the Hugging Face Hub ({type(err).__name__}: "
            f"{str(err)[:200]})",
            "connect this machine to the internet (or fill the hub cache beforehand and set HF_HUB_OFFLINE=1), "
            "accept the model's licence on the hub if it is gated; to try research-crew offline use --preset smoke",
        ) from err
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return Path(out_dir)
