"""The crew's run-state snapshots in state/: latest.json (and previous.json), plus messages.jsonl, the
append-only journal of context messages that snapshots refer to by id."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from checkpoints import atomic_write_json

LATEST, PREVIOUS, JOURNAL = "latest.json", "previous.json", "messages.jsonl"


def save_snapshot(state_dir: Path, snapshot: dict[str, Any]) -> None:
    """Keep the last snapshot as previous.json, then write the new one atomically (temp, fsync, rename)."""
    latest = state_dir / LATEST
    if latest.exists():
        os.replace(latest, state_dir / PREVIOUS)
    atomic_write_json(latest, snapshot)


def save_state(state_dir: Path, contexts: dict[str, Any], fields: dict[str, Any]) -> None:
    """One save of the loop: new context messages go once to the append-only journal (so a save costs the
    same at any step), then the snapshot lists their ids. `fields["clients"]` is the clients by role."""
    fresh = [line for ctx in contexts.values() for line in ctx.fresh_messages()]
    if fresh:
        with open(state_dir / JOURNAL, "a", encoding="utf-8") as journal:
            journal.writelines(json.dumps({"id": i, "message": m}, default=str) + "\n" for i, m in fresh)
            journal.flush()
            os.fsync(journal.fileno())
    snapshot = {**fields, "clients": client_positions(fields["clients"]),
                "contexts": {name: ctx.snapshot() for name, ctx in contexts.items()}}
    save_snapshot(state_dir, snapshot)


def load_snapshot(state_dir: Path) -> dict[str, Any] | None:
    """The newest readable snapshot: latest.json, else previous.json (a kill between the two renames)."""
    for name in (LATEST, PREVIOUS):
        path = state_dir / name
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            continue
    return None


def load_journal(state_dir: Path) -> dict[str, dict[str, Any]]:
    """id -> message; a torn last line (a kill mid-append) is skipped: no snapshot refers to it yet."""
    journal: dict[str, dict[str, Any]] = {}
    path = state_dir / JOURNAL
    if not path.is_file():
        return journal
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        journal[entry["id"]] = entry["message"]
    return journal


def client_positions(clients: dict[str, Any]) -> dict[str, int]:
    """How far each replayed model has answered, so a resumed replay asks the same questions again."""
    positions = {}
    for role, client in clients.items():
        inner = getattr(client, "inner", client)
        if hasattr(inner, "position"):
            positions[role] = inner.position
    return positions
