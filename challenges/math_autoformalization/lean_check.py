"""Do Lean 4 statements compile? All items in a few Lean processes, each loading Mathlib once.

Items are split into at most POOL_SIZE files, compiled in parallel: the union of the items' imports at the
top, then each item in a namespace of its own (its `open` lines, then the statement with its proof replaced
by `sorry`). Lean reports errors with their line, which says which item failed. A file that does not finish
before the deadline leaves its items unchecked (None), never failed.

RESEARCH_CREW_LEAN_PROJECT names a Lake project with Mathlib built (`lake env lean` runs there); without one,
a bare `lean` checks statements that need no Mathlib. ProofNet# states which toolchains it fits: LEAN_RANGE.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.processes import run_group

PROJECT_VARIABLE = "RESEARCH_CREW_LEAN_PROJECT"
LEAN_RANGE = ("4.7.0", "4.16.0-rc2")  # ProofNet#: "compatible with all Lean versions between v4.7.0 and v4.16.0-rc2"
POOL_SIZE = max(1, min(4, os.cpu_count() or 1))
COMMANDS = ("import", "namespace", "section", "end", "open", "set_option", "universe", "variable", "#", "theorem",
            "lemma", "example", "def", "instance", "noncomputable", "attribute", "@[")
ERROR_LINE = re.compile(r"^(?P<file>.+?\.lean):(?P<line>\d+):(?P<col>\d+): error", re.MULTILINE)


@dataclass(frozen=True)
class Toolchain:
    command: list[str]  # what checks a file, e.g. ["lake", "env", "lean"]
    cwd: Path | None
    version: str | None  # Lean's version, e.g. "4.15.0"
    mathlib: str | None  # the Mathlib revision of the project, when there is one

    @property
    def supported(self) -> bool:
        return self.version is not None and version_in_range(self.version, *LEAN_RANGE)

    def describe(self) -> str:
        mathlib = f", Mathlib {self.mathlib}" if self.mathlib else ""
        return f"{' '.join(self.command)} (Lean {self.version or 'unknown'}{mathlib})"


def find_toolchain(needs_mathlib: bool) -> Toolchain | None:
    """The toolchain that can check these statements, or None when none is on PATH."""
    project = os.environ.get(PROJECT_VARIABLE)
    if project and shutil.which("lake") and any(Path(project, f).exists() for f in ("lakefile.lean", "lakefile.toml")):
        command, cwd = ["lake", "env", "lean"], Path(project)
        return Toolchain(command, cwd, _lean_version(command, cwd), mathlib_revision(Path(project)))
    if not needs_mathlib and shutil.which("lean"):
        return Toolchain(["lean"], None, _lean_version(["lean"], None), None)
    return None


def mathlib_revision(project: Path) -> str | None:
    """Mathlib's tag or commit in the project's lake-manifest.json."""
    try:
        manifest = json.loads((project / "lake-manifest.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    for package in manifest.get("packages", []):
        if package.get("name") == "mathlib":
            return package.get("inputRev") or package.get("rev")
    return None


def version_in_range(version: str, low: str, high: str) -> bool:
    return _order(low) <= _order(version) <= _order(high)


def _order(version: str) -> tuple:
    """4.16.0-rc2 sorts before 4.16.0, and after 4.15.x."""
    core, _, pre = version.lstrip("v").partition("-")
    numbers = tuple(int(p) for p in re.findall(r"\d+", core)[:3])
    rc = int(re.sub(r"\D", "", pre) or 0) if pre else 10**6
    return (*numbers, rc)


def _lean_version(command: list[str], cwd: Path | None) -> str | None:
    try:
        out = subprocess.run([*command, "--version"], cwd=cwd, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"version (\d+\.\d+\.\d+(?:-rc\d+)?)", out)
    return match.group(1) if match else None


def build_file(items: list[tuple[str, str]]) -> tuple[str, list[tuple[int, int] | None]]:
    """One Lean file for (statement, header) items; per item its first and last line (None: refused unchecked)."""
    imports = sorted({line.strip() for _, header in items for line in header.splitlines()
                      if line.strip().startswith("import ")})
    lines, ranges = [*imports, ""], []
    for index, (statement, header) in enumerate(items):
        body = statement.split(":=")[0].rstrip()
        if not _plain_statement(body):
            ranges.append(None)
            continue
        start = len(lines) + 1
        lines.append(f"namespace RCItem{index}")
        lines += [line for line in header.splitlines() if line.strip() and not line.strip().startswith("import ")]
        lines += [f"{body} := by sorry", f"end RCItem{index}", ""]
        ranges.append((start, len(lines) - 1))
    return "\n".join(lines) + "\n", ranges


def _plain_statement(body: str) -> bool:
    """One theorem or lemma, no other command and no unclosed comment that would swallow the next items."""
    rows = [row.strip() for row in body.splitlines() if row.strip()]
    if not rows or not rows[0].startswith(("theorem ", "lemma ")):
        return False
    return not any(row.startswith(COMMANDS) for row in rows[1:]) and body.count("/-") == body.count("-/")


def failed_items(output: str, ranges: list[tuple[int, int] | None]) -> set[int] | None:
    """Items with an error inside their lines; None when an error lies outside every item (say, the imports)."""
    failed = set()
    for match in ERROR_LINE.finditer(output):
        line = int(match.group("line"))
        owner = [i for i, r in enumerate(ranges) if r is not None and r[0] <= line <= r[1]]
        if not owner:
            return None
        failed.add(owner[0])
    return failed


def compile_items(statements: list[str], headers: list[str], toolchain: Toolchain, deadline: float,
                  pool_size: int = POOL_SIZE) -> list[bool | None]:
    """True/False per item (compiles or not); None for items not checked before `deadline` (time.monotonic())."""
    items = list(zip(statements, headers, strict=True))
    chunks = [list(range(start, len(items), pool_size)) for start in range(min(pool_size, len(items)))]
    results: list[bool | None] = [None] * len(items)
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max_workers=max(1, len(chunks))) as pool:
        done = pool.map(lambda numbered: _compile_chunk(*numbered, items, toolchain, Path(scratch), deadline),
                        enumerate(chunks))
        for chunk, verdicts in zip(chunks, done, strict=True):
            for index, verdict in zip(chunk, verdicts, strict=True):
                results[index] = verdict
    return results


def _compile_chunk(number: int, chunk: list[int], items: list[tuple[str, str]], toolchain: Toolchain,
                   scratch: Path, deadline: float) -> list[bool | None]:
    text, ranges = build_file([items[i] for i in chunk])
    file = scratch / f"chunk_{number}.lean"
    file.write_text(text, encoding="utf-8")
    code, output = run_group([*toolchain.command, str(file)], toolchain.cwd, deadline - time.monotonic())
    if code is None:
        return [None] * len(chunk)  # stopped at the deadline: these items were not checked
    failed = failed_items(output, ranges)
    if failed is None or (code != 0 and not failed):  # the file itself did not load, or Lean crashed: no verdict
        return [False if r is None else None for r in ranges]
    return [r is not None and i not in failed for i, r in enumerate(ranges)]
