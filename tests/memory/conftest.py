"""Memory test setup: one embedding model per session, and no test touches the real global store."""

import json
from pathlib import Path

import pytest

from memory import Embedder, Memory, load_embedder

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The bundled model, loaded once (it takes seconds); memory's own cache keeps it for the session."""
    return load_embedder()


@pytest.fixture(scope="session")
def paraphrases() -> dict[str, list[list[str]]]:
    return json.loads((FIXTURES / "paraphrases.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _global_store_in_tmp(monkeypatch, tmp_path):
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "global-memory"))
    monkeypatch.delenv("RESEARCH_CREW_MEMORY_MODEL", raising=False)


@pytest.fixture
def open_memory(tmp_path, embedder):
    """Open a Memory for a named run under tmp_path, sharing tmp_path's global store; closed afterwards."""
    opened: list[Memory] = []

    def _open(run: str = "run-a", challenge: str = "minipile", preset: str = "smoke", **kw) -> Memory:
        kw.setdefault("global_dir", tmp_path / "global")
        mem = Memory(tmp_path / "runs" / run, run_id=run, challenge=challenge, preset=preset, embedder=embedder, **kw)
        opened.append(mem)
        return mem

    yield _open
    for mem in opened:
        mem.close()
