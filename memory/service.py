"""The memory a crew uses: this run's store plus the global store shared by every run."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from memory import codec
from memory.digest import estimate_tokens, render_digest
from memory.embedding import Embedder, load_embedder, model_id
from memory.errors import MemoryStoreError
from memory.outcome import best_outcome, best_score, classify
from memory.paths import global_memory_dir, run_memory_dir
from memory.records import (
    Evaluation,
    Hypothesis,
    LogEntry,
    LogHit,
    OutcomeClass,
    Proposal,
    SimilarHypothesis,
    utc_now,
)
from memory.store import VectorStore, open_store, release_store

log = logging.getLogger(__name__)

HYPOTHESES = "hypotheses"
LOG = "research_log"


class Memory:
    """Every hypothesis and its measured outcome, searchable by meaning, in this run and across runs.

    Writes go to the run's store (`run_dir/memory/`) and to the global store, so a later run on the
    same challenge recalls them. Pass `global_dir=False` to keep memory to this run only.
    """

    def __init__(
        self,
        run_dir: Path | str | None,
        *,
        run_id: str = "",
        challenge: str = "",
        preset: str = "",
        global_dir: Path | str | Literal[False] | None = None,
        model: str | None = None,
        embedder: Embedder | None = None,
        similarity_threshold: float = 0.45,
        inconclusive_within: float = 0.005,
    ) -> None:
        self.run_id = run_id or (Path(run_dir).name if run_dir else "")
        self.challenge = challenge
        self.preset = preset
        # 0.45 separates paraphrases from different ideas on the labelled set (tests/fixtures/memory).
        self.similarity_threshold = similarity_threshold
        self.inconclusive_within = inconclusive_within
        self._model = embedder.name if embedder else model_id(model)
        self._embedder = embedder
        self.run_store: VectorStore | None = None
        self.global_store: VectorStore | None = None
        if run_dir is not None:
            self.run_store = open_store(run_memory_dir(run_dir), self._model)
        if global_dir is not False:
            self.global_store = open_store(global_memory_dir(global_dir), self._model)
        if self.run_store is None and self.global_store is None:
            raise MemoryStoreError("memory has no store", hint="give a run_dir, a global_dir, or both")

    @property
    def stores(self) -> list[VectorStore]:
        return [s for s in (self.run_store, self.global_store) if s is not None]

    def close(self) -> None:
        """Release the stores (data stays on disk)."""
        for store in self.stores:
            release_store(store)
        self.run_store = self.global_store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- hypotheses -----------------------------------------------------------------------------

    def propose(self, hypothesis: str | Hypothesis, rationale: str = "", change: str = "", k: int = 5) -> Proposal:
        """Record a new hypothesis (untested) and return the most similar earlier ones with their outcomes.

        Call this before running anything: a similar idea that was already tried shows its result
        ("tried in run X: worse by 3.1%"). `change` is what the hypothesis implies to change in the code
        or configuration. Use the returned hypothesis id with `record_outcome` once it is evaluated.
        """
        h = hypothesis if isinstance(hypothesis, Hypothesis) else Hypothesis(hypothesis, rationale, change)
        h.challenge = h.challenge or self.challenge
        h.preset = h.preset or self.preset
        h.run_id = h.run_id or self.run_id
        vector = self._embed(codec.hypothesis_text(h))
        earlier = self._search(vector, k, None, exclude=h.id)
        similar = [s for s in earlier if s.similarity >= self.similarity_threshold]
        self._write(h, vector)
        return Proposal(h, similar)

    def similar(self, text: str, k: int = 5) -> list[SimilarHypothesis]:
        """Earlier hypotheses close in meaning to `text` (above the similarity threshold), best first."""
        hits = self._search(self._embed(text), k, None)
        return [s for s in hits if s.similarity >= self.similarity_threshold]

    def record_outcome(self, hypothesis_id: str, evaluation: Evaluation | Mapping[str, Any]) -> Hypothesis:
        """Attach a harness evaluation to a hypothesis and set its outcome.

        `evaluation` needs the score (None if it crashed, with 'error'), its id or evaluations/ path,
        and ideally 'best_before' (the best verified score before it) and 'direction' ("max"/"min").
        Without 'best_before' the best score recorded so far in this run is the reference.
        """
        ev = evaluation if isinstance(evaluation, Evaluation) else Evaluation.from_mapping(evaluation)
        h = self.get(hypothesis_id)
        if h is None:
            raise MemoryStoreError(
                f"no hypothesis {hypothesis_id!r} in memory",
                hint="use the id returned by propose (ids look like h-3f9c0a1b2d4e)",
            )
        if ev.best_before is None:
            ev.best_before = self._best_so_far(h, ev.direction)
        h.evaluations.append(ev)
        outcomes = [classify(e, e.best_before, self.inconclusive_within) for e in h.evaluations]
        h.outcome = best_outcome(outcomes)
        h.updated_at = utc_now()
        self._update(h)
        log.info("hypothesis %s (%s): %s", h.id, ev.evaluation_id, h.outcome.describe())
        return h

    def get(self, hypothesis_id: str) -> Hypothesis | None:
        """A hypothesis by id, from this run's store or the global one."""
        for store in self.stores:
            items = store.get(HYPOTHESES, ids=[hypothesis_id])
            if items:
                return codec.hypothesis_from(items[0])
        return None

    def hypotheses(self, filters: dict[str, Any] | None = None) -> list[Hypothesis]:
        """All hypotheses matching the filters (this run's store if there is one), oldest first."""
        store = self.run_store or self.global_store
        assert store is not None
        found = [codec.hypothesis_from(i) for i in store.get(HYPOTHESES, where=self._where(filters))]
        return sorted(found, key=lambda h: h.created_at)

    def recall(self, query: str, k: int = 5, filters: dict[str, Any] | None = None) -> list[SimilarHypothesis]:
        """The `k` hypotheses closest in meaning to `query`, from this run and earlier runs, best first.

        `filters` narrows the search: any of challenge, preset, run_id, outcome (a value or a list of
        values, e.g. {"challenge": "minipile", "outcome": ["improved", "inconclusive"]}).
        """
        where = self._where(filters)
        if self._empty(HYPOTHESES):  # nothing to find: no need to load the embedding model (seconds)
            return []
        return self._search(self._embed(query), k, where)

    # -- research log ---------------------------------------------------------------------------

    def log_step(self, summary: str, step: int | None = None, agent: str = "") -> LogEntry:
        """Append a summary of one research step (what was done, what it showed, what is next)."""
        if step is None:
            step = len(self.read_log()) + 1
        entry = LogEntry(summary, step, agent, self.challenge, self.run_id)
        item, vector = codec.log_item(entry), self._embed(entry.summary)
        for store in self.stores:
            store.upsert(LOG, [item], [vector])
        return entry

    def read_log(self, last: int | None = None, run_id: str | None = None) -> list[LogEntry]:
        """The research log of a run (this one by default) in step order; `last` keeps the final entries."""
        run = run_id or self.run_id
        store = self.run_store if (self.run_store and run == self.run_id) else self.global_store
        if store is None:
            return []
        entries = [codec.log_from(i) for i in store.get(LOG, where={"run_id": run})]
        entries.sort(key=lambda e: (e.step, e.at))
        return entries[-last:] if last else entries

    def search_log(self, query: str, k: int = 5, filters: dict[str, Any] | None = None) -> list[LogHit]:
        """Research-log entries of this and earlier runs closest in meaning to `query`.

        `filters` may hold challenge and run_id.
        """
        if self._empty(LOG):
            return []
        vector, where = self._embed(query), codec.where_clause(filters)
        hits: dict[str, LogHit] = {}
        for store in self.stores:
            for item in store.query(LOG, vector, k, where):
                if item.id not in hits:
                    hits[item.id] = LogHit(codec.log_from(item), float(item.similarity or 0.0))
        return sorted(hits.values(), key=lambda h: -h.similarity)[:k]

    # -- digest ---------------------------------------------------------------------------------

    def digest(
        self,
        query: str | None = None,
        max_tokens: int = 500,
        k: int = 12,
        count_tokens: Callable[[str], int] = estimate_tokens,
    ) -> str:
        """The most relevant earlier hypotheses and outcomes for a prompt, within `max_tokens`.

        `query` defaults to the challenge name; the search keeps to this challenge when one is set.
        Empty when memory holds nothing relevant.
        """
        filters = {"challenge": self.challenge} if self.challenge else None
        hits = self.recall(query or self.challenge or "hypothesis", k, filters)
        return render_digest(hits, max_tokens, count_tokens)

    # -- internals ------------------------------------------------------------------------------

    def _empty(self, collection: str) -> bool:
        return all(store.count(collection) == 0 for store in self.stores)

    def _embed(self, text: str) -> list[float]:
        if self._embedder is None:
            self._embedder = load_embedder(self._model)
        return self._embedder.embed([text])[0]

    def _where(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        unknown = set(filters or {}) - set(codec.FILTER_KEYS)
        if unknown:
            raise MemoryStoreError(
                f"unknown memory filter(s): {', '.join(sorted(unknown))}",
                hint=f"filter on {', '.join(codec.FILTER_KEYS)}",
            )
        return codec.where_clause(filters)

    def _search(
        self, vector: list[float], k: int, where: dict[str, Any] | None, exclude: str = ""
    ) -> list[SimilarHypothesis]:
        # The global store holds other runs' records; the run store covers a run without one.
        found: dict[str, SimilarHypothesis] = {}
        for store in self.stores:
            for item in store.query(HYPOTHESES, vector, k + 1, where):
                if item.id != exclude and item.id not in found:
                    found[item.id] = SimilarHypothesis(codec.hypothesis_from(item), float(item.similarity or 0))
        return sorted(found.values(), key=lambda s: -s.similarity)[:k]

    def _write(self, h: Hypothesis, vector: list[float]) -> None:
        item = codec.hypothesis_item(h)
        for store in self.stores:
            store.upsert(HYPOTHESES, [item], [vector])

    def _update(self, h: Hypothesis) -> None:
        item = codec.hypothesis_item(h)
        for store in self.stores:
            if store.get(HYPOTHESES, ids=[h.id]):
                store.update_metadata(HYPOTHESES, item)
            else:  # e.g. recorded before this store existed: embed it now
                store.upsert(HYPOTHESES, [item], [self._embed(item.document)])

    def _best_so_far(self, h: Hypothesis, direction: str) -> float | None:
        filters = {"challenge": h.challenge, "preset": h.preset} if h.challenge else None
        tested = [x for x in self.hypotheses(filters) if x.outcome.status is not OutcomeClass.UNTESTED]
        evaluations = [e for x in tested for e in x.evaluations if e.direction == direction]
        evaluations += [e for e in h.evaluations if e.direction == direction]
        return best_score(evaluations)
