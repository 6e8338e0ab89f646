"""Trace events are typed records (crew/run/events.py): no reader names a field that no writer sets.

Checked statically over every module of crew/ and benchmarks/, so a drifted reader fails here even when the
branch that reads it never runs in a test:
- wherever a variable is known to hold an event record (an `isinstance(x, SomeEvent)` test, in an if, an `and`
  chain or a comprehension's condition, or a parameter annotated with an event type), every `x.name` it reads
  must be a field or method of that record, and no string key may be looked up on it (`x["name"]`);
- every field of every record is set by some writer: a required field always is, an optional one (default None)
  must be passed by name at some construction of the record; and every kind has a writer.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

from crew.run import events
from crew.run.events import STAMP, Event, PhaseEntered, RunFinished, UnknownEvent, parse_event
from crew.run.trace import Trace, read_events

REPO = Path(__file__).resolve().parents[2]
SCANNED = [*sorted((REPO / "crew").rglob("*.py")), *sorted((REPO / "benchmarks").rglob("*.py"))]
RECORDS = [cls for cls in vars(events).values()
           if isinstance(cls, type) and issubclass(cls, Event) and cls not in (Event, UnknownEvent)]


def event_classes(node: ast.expr | None) -> tuple[type[Event], ...]:
    """The event records an isinstance spec or an annotation names (`Phase`, `events.Phase`, `A | B | None`)."""
    name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name) and node.value.id == "events" else None)  # not threading.Event
    if name is not None:
        found = getattr(events, name, None)
        return (found,) if isinstance(found, type) and issubclass(found, Event) else ()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return event_classes(node.left) + event_classes(node.right)
    if isinstance(node, ast.Tuple):
        return tuple(cls for element in node.elts for cls in event_classes(element))
    return ()


def narrowing(test: ast.expr) -> dict[str, tuple[type[Event], ...]]:
    """What `isinstance(name, Records)` tests (alone or in an `and` chain) make known about names."""
    known = {}
    for node in test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]:
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                and len(node.args) == 2 and isinstance(node.args[0], ast.Name)
                and (classes := event_classes(node.args[1]))):
            known[node.args[0].id] = classes
    return known


def readable(cls: type[Event], name: str) -> bool:
    return name in {f.name for f in dataclasses.fields(cls)} or hasattr(cls, name)


def misreads(source: str, where: str) -> list[str]:
    """Every read of a field an event record does not have, in this module's source."""
    problems: list[str] = []

    def visit(node: ast.AST, known: dict[str, tuple[type[Event], ...]]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            arguments = node.args
            params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            known = {k: v for k, v in known.items() if k not in {a.arg for a in params}}
            known |= {a.arg: classes for a in params if (classes := event_classes(a.annotation))}
        elif isinstance(node, ast.If | ast.IfExp):
            visit(node.test, known)
            for child in node.body if isinstance(node.body, list) else [node.body]:
                visit(child, known | narrowing(node.test))
            for child in node.orelse if isinstance(node.orelse, list) else [node.orelse]:
                visit(child, known)
            return
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for value in node.values:
                visit(value, known)
                known = known | narrowing(value)
            return
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in node.generators:
                visit(generator.iter, known)
                for condition in generator.ifs:
                    visit(condition, known)
                    known = known | narrowing(condition)
            for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
                visit(part, known)
            return
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in known:
            problems.extend(f"{where}:{node.lineno}: {node.value.id}.{node.attr}: {cls.__name__} ('{cls.kind}' "
                            f"events) has no field {node.attr!r}"
                            for cls in known[node.value.id] if not readable(cls, node.attr))
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in known
              and isinstance(node.slice, ast.Constant)):
            problems.append(f"{where}:{node.lineno}: {node.value.id}[{node.slice.value!r}]: an event record is read "
                            "by attribute, not by string key")
        for child in ast.iter_child_nodes(node):
            visit(child, known)

    visit(ast.parse(source), {})
    return problems


def written_fields() -> dict[type[Event], set[str]]:
    """For each record, the field names its constructions pass (a `**ids` splat: the keys of the dict literals
    assigned to `ids` in the same function)."""
    written: dict[type[Event], set[str]] = {cls: set() for cls in RECORDS}
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            for call in [n for n in ast.walk(function) if isinstance(n, ast.Call)]:
                for cls in set(event_classes(call.func)) & set(RECORDS):
                    written[cls] |= {k.arg for k in call.keywords if k.arg}
                    written[cls] |= {key for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)
                                     for key in _dict_keys_assigned(function, k.value.id)}
    return written


def _dict_keys_assigned(function: ast.AST, name: str) -> set[str]:
    keys = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(name in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
                                                for t in node.targets):
            keys |= {k.value for d in ast.walk(node.value) if isinstance(d, ast.Dict)
                     for k in d.keys if isinstance(k, ast.Constant)}
    return keys


def test_no_reader_names_a_field_its_event_does_not_have() -> None:
    problems = [p for path in SCANNED for p in misreads(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert not problems, "\n".join(problems)


def test_every_field_of_every_event_is_written() -> None:
    written = written_fields()
    unwritten = [f"{cls.__name__}.{f.name}" for cls in RECORDS for f in dataclasses.fields(cls)
                 if f.name not in STAMP and f.default is not dataclasses.MISSING and f.name not in written[cls]]
    no_writer = [cls.__name__ for cls in RECORDS if not written[cls]]
    assert not unwritten and not no_writer, f"fields no writer sets: {unwritten}; kinds with no writer: {no_writer}"


def test_the_check_catches_a_drifted_reader() -> None:
    """The drift the issue found: the panel read `reserve_s` from phase events, which nothing writes."""
    drifted = ("def apply(self, event: Event) -> None:\n"
               "    if isinstance(event, PhaseEntered):\n"
               "        self.reserve_s = event.reserve_s\n"
               "    elif isinstance(event, RunFinished) and event['exit_code']:\n"
               "        pass\n"
               "    marks = [e.phase for e in self.events if isinstance(e, events.PhaseEntered)]\n"
               "    late = [e.stage for e in self.events if isinstance(e, events.PhaseEntered)]\n")
    assert misreads(drifted, "m") == [
        "m:3: event.reserve_s: PhaseEntered ('phase' events) has no field 'reserve_s'",
        "m:4: event['exit_code']: an event record is read by attribute, not by string key",
        "m:7: e.stage: PhaseEntered ('phase' events) has no field 'stage'"]


def test_lines_on_disk_keep_their_format_and_older_lines_still_read(tmp_path) -> None:
    trace = Trace(tmp_path / "trace.jsonl")
    trace.emit(PhaseEntered(phase="work", time_left_s=12.5))
    trace.emit(events.ModelResponse(agent="engineer", step=3, response={"text": "hi"}, usage={"input": 5},
                                    subtask_id="engineer-1", cost_usd=0.25))
    trace.emit(events.ModelResponse(agent="supervisor", step=4, response={"text": "ok"}, usage={}, cost_usd=0.5))
    lines = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert [list(line) for line in lines] == [
        ["seq", "t", "kind", "agent", "phase", "time_left_s"],
        ["seq", "t", "kind", "agent", "step", "response", "usage", "subtask_id", "cost_usd"],
        ["seq", "t", "kind", "agent", "step", "response", "usage", "cost_usd"]]  # an unset optional field is left out
    assert [line["seq"] for line in lines] == [1, 2, 3] and lines[0]["kind"] == "phase"
    read = read_events(tmp_path / "trace.jsonl")
    assert [type(e) for e in read] == [PhaseEntered, events.ModelResponse, events.ModelResponse]
    assert read[1].subtask_id == "engineer-1" and read[2].subtask_id is None and read[1].seq == 2
    # A line from an older or newer version: an unknown field is dropped, a missing one reads as None, an
    # unknown kind keeps its fields.
    older = parse_event({"seq": 7, "t": "2026-01-01T00:00:00.000+00:00", "kind": "run_finished", "agent": "crew",
                         "status": "submitted", "exit_code": 0, "surplus": 1})
    assert older == RunFinished(seq=7, t="2026-01-01T00:00:00.000+00:00", status="submitted", exit_code=0, note=None)
    unknown = parse_event({"seq": 8, "kind": "from_the_future", "agent": "x", "detail": [1]})
    assert isinstance(unknown, UnknownEvent) and unknown.kind == "from_the_future"
    assert unknown.to_json() == {"seq": 8, "t": "", "kind": "from_the_future", "agent": "x", "detail": [1]}
