"""Does a Lean 4 statement compile? With `lake env lean` in a Mathlib project, or a bare `lean` for core Lean.

RESEARCH_CREW_LEAN_PROJECT names a Lake project with Mathlib built; without one, statements whose header
imports Mathlib cannot be checked and the compile rate is unavailable (None), never zero.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

PROJECT_VARIABLE = "RESEARCH_CREW_LEAN_PROJECT"


def lean_runner(needs_mathlib: bool) -> tuple[list[str], Path | None] | None:
    """The command that checks a file, and where to run it; None when no suitable toolchain is on PATH."""
    project = os.environ.get(PROJECT_VARIABLE)
    if project and shutil.which("lake") and any(Path(project, f).exists() for f in ("lakefile.lean", "lakefile.toml")):
        return ["lake", "env", "lean"], Path(project)
    if not needs_mathlib and shutil.which("lean"):
        return ["lean"], None
    return None


def compile_rate(statements: list[str], headers: list[str], timeout_s: float = 120.0) -> tuple[float | None, str]:
    """Share of statements that compile (proof replaced by `sorry`), and how it was checked or why not."""
    runner = lean_runner(any("Mathlib" in h for h in headers))
    if runner is None:
        return None, (f"unavailable: no Lean toolchain (lake with {PROJECT_VARIABLE}, or lean) on PATH")
    command, cwd = runner
    passed = 0
    with tempfile.TemporaryDirectory() as scratch:
        for index, (statement, header) in enumerate(zip(statements, headers, strict=True)):
            body = statement.split(":=")[0].rstrip() + " := by sorry"
            file = Path(scratch) / f"item_{index}.lean"
            file.write_text(f"{header}\n\n{body}\n", encoding="utf-8")
            try:
                proc = subprocess.run([*command, str(file)], cwd=cwd, capture_output=True, timeout=timeout_s)
                passed += proc.returncode == 0
            except subprocess.TimeoutExpired:
                pass
    return passed / max(1, len(statements)), " ".join(command)
