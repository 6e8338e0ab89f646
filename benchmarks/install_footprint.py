"""The README's install against one that lets pip bring chromadb's own dependencies: each in a fresh venv, one
after the other, pip's cache off for both; time, installed size and package count side by side.

    python benchmarks/install_footprint.py [--keep DIR]

"with chromadb's dependencies" is this tree with `chromadb==1.5.9` added to pyproject's dependencies (as it was
before chromadb was installed apart): pip then also brings what a chromadb server needs (kubernetes,
onnxruntime, uvicorn, ...). "README" is the quick start's command: `pip install torch==2.13.0 -e . && pip install
--no-deps chromadb==1.5.9`. Needs the package registries (or a local wheel folder pip is configured with).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMADB = "chromadb==1.5.9"
TORCH = "torch==2.13.0"
HEAVY = ("kubernetes", "onnxruntime", "uvicorn", "bcrypt", "grpcio", "opentelemetry-sdk")


def source_copy(dest: Path, chromadb_with_deps: bool) -> Path:
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info"))
    if chromadb_with_deps:
        pyproject = dest / "pyproject.toml"
        text = pyproject.read_text()
        text, count = re.subn(r"^dependencies = \[\n", f'dependencies = [\n    "{CHROMADB}",\n', text, flags=re.M)
        if count != 1:
            raise SystemExit("pyproject.toml has no `dependencies = [` line to add chromadb to")
        pyproject.write_text(text)
    return dest


def install(work: Path, name: str, chromadb_with_deps: bool) -> dict[str, object]:
    src = source_copy(work / f"src-{name}", chromadb_with_deps)
    venv = work / f"venv-{name}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--no-cache-dir"]
    commands = [[*pip, "install", TORCH, "-e", str(src)]]
    if not chromadb_with_deps:
        commands.append([*pip, "install", "--no-deps", CHROMADB])
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1"}
    started = time.monotonic()
    for command in commands:
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    listed = subprocess.run([*pip, "list", "--format=freeze"], check=True, capture_output=True, text=True).stdout
    names = {line.split("==")[0].lower() for line in listed.splitlines() if "==" in line}
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    return {"seconds": seconds, "bytes": size, "packages": len(names),
            "heavy": [h for h in HEAVY if h in names]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="build the venvs here and keep them (default: a temporary folder)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="install-footprint-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = {"with chromadb's dependencies": install(work, "before", True), "README": install(work, "after", False)}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("| install | time | installed size | packages | of kubernetes, onnxruntime, uvicorn, bcrypt, grpcio, "
          "opentelemetry-sdk |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(f"| {name} | {row['seconds']:.0f} s | {row['bytes'] / 2**20:.0f} MiB | {row['packages']} | "
              f"{', '.join(row['heavy']) or 'none'} |")
    before, after = rows.values()
    print(f"README / with chromadb's dependencies: time {after['seconds'] / before['seconds']:.2f}, "
          f"size {after['bytes'] / before['bytes']:.2f}, packages {after['packages']}/{before['packages']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
