"""Loading hub datasets with an error that names the dataset and what to do, instead of a traceback."""

from __future__ import annotations

import logging

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
