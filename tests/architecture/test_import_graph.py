"""The import graph: the one-way layering of DESIGN.md, and no cycle between modules.

Every import counts, a lazy one inside a function too: a cycle that is only broken by importing late is
still two modules that cannot be read or changed apart.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("crew", "toolkit", "memory", "challenges", "checkpoints")
# What each package may import of ours (DESIGN.md's layout table).
MAY_IMPORT = {"crew": set(PACKAGES), "toolkit": {"checkpoints"}, "memory": {"checkpoints"},
              "challenges": {"checkpoints"}, "checkpoints": set()}
AUTOGEN_ADAPTER = "crew.agent.autogen_adapter"  # the one module that may import autogen_core/_agentchat/_ext


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    """Every module of our packages; a built-in challenge's own files are scripts, not part of the graph."""
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = module_name(path)
            if package == "challenges" and name.split(".")[1:2] not in (["framework"], ["lib"], []):
                continue
            found[name] = path
    return found


def imported_names(path: Path, known: Collection[str] = ()) -> set[str]:
    """Every module a file imports, ours or not (`from pkg import mod` names the module when mod is known)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                         for alias in node.names)
    return names


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The project modules a file imports."""
    return {n for n in imported_names(path, known) if n in known}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(path, set(modules)) for name, path in modules.items()}


def test_each_package_imports_only_the_packages_below_it(graph) -> None:
    wrong = [f"{a} imports {b}" for a, targets in graph.items() for b in targets
             if b.split(".")[0] != a.split(".")[0] and b.split(".")[0] not in MAY_IMPORT[a.split(".")[0]]]
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_round_a_cycle(graph) -> None:
    cycles = [component for component in strongly_connected(graph) if len(component) > 1]
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in cycles)


def test_only_the_adapter_imports_autogen() -> None:
    """autogen sits behind one adapter (DESIGN.md): the model clients and the loop speak our plain types."""
    importers = sorted(name for name, path in project_modules().items()
                       if any(n.split(".")[0].startswith("autogen") for n in imported_names(path)))
    assert importers == [AUTOGEN_ADAPTER]


def test_the_loop_does_not_know_the_replay_client(graph) -> None:
    """A scripted model ends like any model that has no more answers (ModelExhausted, crew/agent/models)."""
    knowing = [name for name, targets in graph.items()
               if name.startswith("crew.loop") and "crew.agent.replay" in targets]
    assert not knowing


def test_the_cycle_check_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}, {"d"}]


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
