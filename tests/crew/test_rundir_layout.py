"""RunDir (crew/run/rundir.py) is the one place that spells out the run directory's layout: no other module of
crew/ joins a path with one of its names (`root / "result.json"`), nor a benchmark with one of its file names
(the benchmarks' own scratch folders may be called memory/ or evaluations/)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = {"run.toml", "trace.jsonl", "result.json", "report.md", "report.html", "latest.json", "error.txt"}
LAYOUT = FILES | {"state", "workspace", "jobs", "memory", "evaluations", "scratch", "report_files"}
OWNER = REPO / "crew" / "run" / "rundir.py"
# Not yet routed: these lines are in the files issue 19c (one end of a run) is rewriting; they move to
# RunDir.error_txt when it lands.
PENDING: set[tuple[str, str]] = set()  # (file, name) pairs still to move into RunDir


def layout_joins(path: Path, names: set[str]) -> list[tuple[int, str]]:
    return [(node.lineno, node.right.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant) and node.right.value in names]


def test_only_rundir_spells_out_the_run_directory() -> None:
    scanned = [(path, LAYOUT) for path in sorted((REPO / "crew").rglob("*.py")) if path != OWNER]
    scanned += [(path, FILES) for path in sorted((REPO / "benchmarks").rglob("*.py"))]
    found = [f"{path.relative_to(REPO)}:{line}: / {name!r}" for path, names in scanned
             for line, name in layout_joins(path, names) if (str(path.relative_to(REPO)), name) not in PENDING]
    assert not found, "use RunDir's names instead:\n" + "\n".join(found)
    assert len(layout_joins(OWNER, LAYOUT)) >= 10  # the check sees RunDir's own joins: it looks where it should
