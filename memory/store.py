"""One chromadb store on disk, safe to share between processes, that recovers from corruption.

Layout of a store folder:
    lock          flock target that serialises every operation across processes
    generation    a counter bumped by every write, so a process knows when its open index is stale
    data/         the chromadb PersistentClient folder and store.json (format, embedding model)
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from checkpoints.atomic import atomic_write_text
from memory.errors import MemoryStoreError
from memory.exact import ExactIndex
from memory.locking import FileLock

# Telemetry off before chromadb is imported anywhere in this process.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

try:
    import chromadb  # noqa: E402
except ModuleNotFoundError as exc:  # installed apart, without its server's dependencies (pyproject.toml)
    if exc.name != "chromadb":
        raise
    raise ModuleNotFoundError("chromadb, the memory store, is not installed: pip install --no-deps chromadb==1.5.9 "
                              "(README, Quick start)", name="chromadb") from exc
from chromadb.api.shared_system_client import SharedSystemClient  # noqa: E402
from chromadb.config import Settings  # noqa: E402

log = logging.getLogger(__name__)

FORMAT = 1
COLLECTIONS = ("hypotheses", "research_log")
_SETTINGS = Settings(anonymized_telemetry=False, allow_reset=False)


@dataclass
class Item:
    """A stored item: its id, the embedded text, its metadata and (for queries) its similarity."""

    id: str
    document: str
    metadata: dict[str, Any]
    similarity: float | None = None


class VectorStore:
    """A chromadb store in `root` for one embedding model, shared safely across processes.

    Every operation holds the store's file lock; a process reopens its client when another one has
    written since (chromadb's in-memory index does not see other processes' writes).
    """

    def __init__(self, root: Path | str, model: str, lock_timeout_s: float = 120.0) -> None:
        self.root = Path(root)
        self.data_dir = self.root / "data"
        self.model = model
        self.recovered_from: Path | None = None
        self._lock = FileLock(self.root / "lock", lock_timeout_s)
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._exact: dict[str, ExactIndex] = {}  # loaded on the first query after (re)opening
        self._seen_generation = -1
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(
                f"cannot create the memory store folder {self.root}: {exc}",
                hint="choose a writable folder (argument or $RESEARCH_CREW_MEMORY_DIR for the global store)",
            ) from exc
        with self._lock.hold():
            self._open()

    # -- opening, recovery, staleness -------------------------------------------------------------

    def _open(self) -> None:
        try:
            self._open_or_fail()
        except MemoryStoreError:
            raise
        except BaseException as exc:  # chromadb's Rust core can raise PanicException (a BaseException)
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            self._move_aside(exc)
            self._open_or_fail()
        self._seen_generation = self._read_generation()

    def _open_or_fail(self) -> None:
        self._close_client()
        manifest = self.data_dir / "store.json"
        fresh = not self.data_dir.exists() or not any(self.data_dir.iterdir())
        if not fresh:
            info = json.loads(manifest.read_text(encoding="utf-8"))  # missing or bad JSON: corrupt
            if info.get("model") != self.model:
                raise MemoryStoreError(
                    f"the memory store {self.root} was built with embedding model {info.get('model')!r}, "
                    f"not {self.model!r}",
                    hint=f"open it with model={info.get('model')!r}, or use another folder for the new model",
                )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if fresh:  # manifest first: a crash right after leaves a store that opens, not a "corrupt" one
            atomic_write_text(manifest, json.dumps({"format": FORMAT, "model": self.model}) + "\n")
        self._client = chromadb.PersistentClient(path=str(self.data_dir), settings=_SETTINGS)
        for name in COLLECTIONS:
            collection = self._client.get_or_create_collection(
                name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
            )
            collection.count()  # a cheap read that fails on a damaged database
            self._collections[name] = collection

    def _move_aside(self, exc: BaseException) -> None:
        self._close_client()
        _forget_system(self.data_dir)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = self.root / f"data.corrupt-{stamp}"
        try:
            os.replace(self.data_dir, aside)
        except OSError as move_error:
            raise MemoryStoreError(
                f"memory store {self.data_dir} is unreadable ({type(exc).__name__}: {exc}) and could not "
                f"be moved aside to {aside}: {move_error}",
                hint=f"move or repair {self.data_dir} by hand, or point the store at another folder",
            ) from exc
        self.recovered_from = aside
        log.warning(
            "memory store %s was unreadable (%s: %s); moved it to %s and started a fresh store in %s",
            self.data_dir,
            type(exc).__name__,
            exc,
            aside,
            self.data_dir,
        )

    def _close_client(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception as exc:  # closing a broken client must not hide the real problem
                log.debug("closing chromadb client failed: %s", exc)
        self._client = None
        self._collections = {}
        self._exact = {}

    def _read_generation(self) -> int:
        try:
            return int((self.root / "generation").read_text(encoding="utf-8").strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    @contextmanager
    def _session(self, write: bool) -> Iterator[None]:
        with self._lock.hold():
            if self._client is None or self._read_generation() != self._seen_generation:
                self._open()
            try:
                yield
            finally:
                if write:  # even after a failed write: chromadb may have changed part of the store
                    self._seen_generation = self._read_generation() + 1
                    atomic_write_text(self.root / "generation", f"{self._seen_generation}\n")

    def close(self) -> None:
        """Release the chromadb client (the data stays on disk)."""
        with self._lock.hold():
            self._close_client()

    # -- operations -----------------------------------------------------------------------------

    def upsert(self, collection: str, items: Sequence[Item], embeddings: Sequence[Sequence[float]]) -> None:
        """Add or replace items with their embeddings."""
        if not items:
            return
        ids, documents = [i.id for i in items], [i.document for i in items]
        metadatas = [_clean(i.metadata) for i in items]
        vectors = [list(e) for e in embeddings]
        with self._session(write=True):
            self._collections[collection].upsert(ids=ids, embeddings=vectors, documents=documents, metadatas=metadatas)
            if collection in self._exact:
                self._exact[collection].upsert(ids, vectors, documents, metadatas)

    def update_metadata(self, collection: str, item: Item) -> None:
        """Replace an item's metadata, keeping its text and embedding."""
        # Passing the text again would make chromadb try to re-embed it (it has no embedding function).
        with self._session(write=True):
            self._collections[collection].update(ids=[item.id], metadatas=[_clean(item.metadata)])
            if collection in self._exact:
                self._exact[collection].update_metadata(item.id, _clean(item.metadata))

    def get(
        self, collection: str, ids: Sequence[str] | None = None, where: Mapping[str, Any] | None = None
    ) -> list[Item]:
        """Items by id or by metadata filter (all items when neither is given)."""
        with self._session(write=False):
            got = self._collections[collection].get(
                ids=list(ids) if ids is not None else None,
                where=dict(where) if where else None,
                include=["documents", "metadatas"],
            )
        return [
            Item(i, d or "", dict(m or {}))
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def query(
        self, collection: str, embedding: Sequence[float], k: int, where: Mapping[str, Any] | None = None
    ) -> list[Item]:
        """The `k` items nearest to `embedding` (cosine, exact), best first, with their similarity."""
        with self._session(write=False):
            index = self._exact.get(collection)
            if index is None:
                got = self._collections[collection].get(include=["embeddings", "documents", "metadatas"])
                index = ExactIndex(got["ids"], got["embeddings"], got["documents"], got["metadatas"])
                self._exact[collection] = index
            hits = index.search(embedding, k, where)
            return [Item(index.ids[i], index.documents[i] or "", dict(index.metadatas[i]), sim) for i, sim in hits]

    def count(self, collection: str) -> int:
        """How many items the collection holds."""
        with self._session(write=False):
            return int(self._collections[collection].count())


def _forget_system(path: Path) -> None:
    # A client that failed to start stays cached by chromadb under its path and would be reused
    # broken for the fresh store; drop it.
    with SharedSystemClient._refcount_lock:
        SharedSystemClient._identifier_to_system.pop(str(path), None)
        SharedSystemClient._identifier_to_refcount.pop(str(path), None)


_registry: dict[tuple[Path, str], tuple[VectorStore, int]] = {}
_registry_lock = threading.Lock()


def open_store(root: Path | str, model: str) -> VectorStore:
    """The process's one VectorStore for `root` (shared: chromadb keeps one index per path per process)."""
    key = (Path(root).resolve(), model)
    with _registry_lock:
        store, users = _registry.get(key, (None, 0))
        if store is None:
            store = VectorStore(key[0], model)
        _registry[key] = (store, users + 1)
        return store


def release_store(store: VectorStore) -> None:
    """Give back a store from `open_store`; the last user closes its client."""
    key = (store.root, store.model)
    with _registry_lock:
        _, users = _registry.get(key, (store, 1))
        if users <= 1:
            _registry.pop(key, None)
            store.close()
        else:
            _registry[key] = (store, users - 1)


def _clean(metadata: Mapping[str, Any]) -> dict[str, Any]:
    # chromadb metadata values must be scalars; None means "not set".
    return {k: v for k, v in metadata.items() if v is not None}
