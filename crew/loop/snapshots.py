"""The crew's run-state snapshots in state/: latest.json (and previous.json), plus messages.jsonl, the
append-only journal of context messages that snapshots refer to by id."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from checkpoints import atomic_write_json
from crew.run.rundir import STATE_LATEST

LATEST, PREVIOUS, JOURNAL = STATE_LATEST, "previous.json", "messages.jsonl"


def save_snapshot(state_dir: Path, snapshot: dict[str, Any]) -> None:
    """Keep the last snapshot as previous.json, then write the new one atomically (temp, fsync, rename)."""
    latest = state_dir / LATEST
    if latest.exists():
        os.replace(latest, state_dir / PREVIOUS)
    atomic_write_json(latest, snapshot)


def save_loop(loop: Any) -> None:
    """One save of the crew loop (crew/loop/step_loop.py): new context messages go once to the append-only journal (so
    a save costs the same at any step), then the snapshot lists their ids."""
    sessions = {"supervisor": loop.supervisor, **{f"worker:{sid}": w for sid, w in loop.workers.items()}}
    fresh = [line for s in sessions.values() for line in s.context.fresh_messages()]
    if fresh:
        with open(loop.state_dir / JOURNAL, "a", encoding="utf-8") as journal:
            journal.writelines(json.dumps({"id": i, "message": m}, default=str) + "\n" for i, m in fresh)
            journal.flush()
            os.fsync(journal.fileno())
    save_snapshot(loop.state_dir, {
        "step": loop.state.step, "loop": asdict(loop.state), "plan": loop.tools.plan.to_dict(),
        "usage": loop.meter.to_dict(), "clients": client_positions(loop.clients, sessions.values()),
        "known_jobs": loop.known_jobs(), "known_evaluations": loop.known_evaluations(), "trace_seq": loop.trace.seq,
        "saved_at": time.time(), "contexts": {name: s.saved_context for name, s in sessions.items()}})
    loop.clock.save(loop.state_dir)


def restore_loop(loop: Any, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
    """Put a crew loop back where a snapshot left it: loop state, plan, usage and the agents' contexts."""
    from crew.loop.plan import Plan
    from crew.loop.state import state_from_snapshot

    loop.state = state_from_snapshot(snapshot["loop"])
    loop.tools.plan.items[:] = Plan.from_dict(snapshot["plan"]).items
    loop.meter.load(snapshot["usage"])
    loop.supervisor.context.restore(snapshot["contexts"]["supervisor"], journal)
    for sub in loop.state.subtasks:
        worker = loop.workers[sub.id] = loop._session(sub.role)
        saved = snapshot["contexts"].get(f"worker:{sub.id}") or snapshot["contexts"]["worker"]  # or an older save's
        worker.context.restore(saved, journal)
        worker.mark_turn_boundary()
    loop.tools.workers.at_work([s.role for s in loop.state.subtasks])


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


def client_positions(clients: dict[str, Any], sessions: Any = ()) -> dict[str, int]:
    """How far each replayed model has answered, so a resumed replay asks the same questions again. A session
    whose turn is under way counts where that turn began (its save is the conversation before the turn)."""
    positions = {}
    for role, client in clients.items():
        inner = getattr(client, "inner", client)
        if hasattr(inner, "position"):
            positions[role] = inner.position
    for session in sessions:
        if session.saved_position is not None:
            positions[session.role] = min(positions.get(session.role, session.saved_position),
                                          session.saved_position)
    return positions
