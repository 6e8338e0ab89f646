"""Hypothesis records, vector search and the research log, shared across runs.

`Memory(run_dir, run_id=..., challenge=..., preset=...)` is what the crew uses: `propose`,
`record_outcome`, `recall`, `log_step` / `read_log` / `search_log` and `digest`. It knows nothing of
autogen; the crew wraps these methods as tools.
"""

from memory.embedding import BUNDLED, MODEL_ENV, Embedder, load_embedder
from memory.errors import MemoryStoreError
from memory.paths import GLOBAL_DIR_ENV, global_memory_dir, run_memory_dir
from memory.records import (
    Evaluation,
    Hypothesis,
    LogEntry,
    LogHit,
    Outcome,
    OutcomeClass,
    Proposal,
    SimilarHypothesis,
)
from memory.service import Memory
from memory.store import VectorStore

__all__ = [
    "BUNDLED",
    "GLOBAL_DIR_ENV",
    "MODEL_ENV",
    "Embedder",
    "Evaluation",
    "Hypothesis",
    "LogEntry",
    "LogHit",
    "Memory",
    "MemoryStoreError",
    "Outcome",
    "OutcomeClass",
    "Proposal",
    "SimilarHypothesis",
    "VectorStore",
    "global_memory_dir",
    "load_embedder",
    "run_memory_dir",
]
