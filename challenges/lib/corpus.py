"""Offline training text: the docstrings of the Python standard library, present on any machine with Python."""

from __future__ import annotations

import ast
import hashlib
import sysconfig
from collections.abc import Iterator
from pathlib import Path

SKIP_PARTS = {"test", "tests", "idle_test", "site-packages", "lib2to3", "__pycache__"}


def stdlib_docstrings(min_chars: int = 40) -> Iterator[str]:
    """Yield module, class and function docstrings of the stdlib in a fixed order (parsed, never imported)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if SKIP_PARTS & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= min_chars:
                    yield doc


def split_of(text: str, validation_share: float = 0.05) -> str:
    """A stable train/validation split by content hash, the same on every machine."""
    bucket = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "validation" if bucket < validation_share else "train"
