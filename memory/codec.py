"""Records to and from store items: the full record as JSON, plus the fields filters need."""

import json
from typing import Any

from memory.records import Hypothesis, LogEntry
from memory.store import Item

# Filters `recall` accepts, each a metadata field of every hypothesis item.
FILTER_KEYS = ("challenge", "preset", "run_id", "outcome")


def hypothesis_text(h: Hypothesis) -> str:
    """The text embedded for a hypothesis: the statement carries its meaning best."""
    return h.statement


def hypothesis_item(h: Hypothesis) -> Item:
    meta: dict[str, Any] = {
        "challenge": h.challenge,
        "preset": h.preset,
        "run_id": h.run_id,
        "outcome": h.outcome.status.value,
        "created_at": h.created_at,
        "record": json.dumps(h.to_dict()),
    }
    return Item(h.id, hypothesis_text(h), meta)


def hypothesis_from(item: Item) -> Hypothesis:
    return Hypothesis.from_dict(json.loads(item.metadata["record"]))


def log_item(entry: LogEntry) -> Item:
    meta: dict[str, Any] = {
        "challenge": entry.challenge,
        "run_id": entry.run_id,
        "step": entry.step,
        "agent": entry.agent,
        "at": entry.at,
        "record": json.dumps(entry.to_dict()),
    }
    return Item(entry.id, entry.summary, meta)


def log_from(item: Item) -> LogEntry:
    return LogEntry(**json.loads(item.metadata["record"]))


def where_clause(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """A chromadb `where` from {"challenge": "x", "outcome": ["worse", "crashed"], ...}; None if empty."""
    clauses = []
    for key, value in (filters or {}).items():
        if value is None or value == "":
            continue
        if isinstance(value, list | tuple | set):
            clauses.append({key: {"$in": [str(v) for v in value]}})
        else:
            clauses.append({key: str(value)})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
