"""Run every built-in challenge's smoke preset with the baseline policy; print status, score and wall time.

    python benchmarks/smoke_all.py [NAME ...] [--out DIR]

Each run is the real command line (`research-crew run NAME --preset smoke --model baseline`), so the time
includes data preparation when the cache is cold. Exit 1 if any run did not reach `submitted` with a
finite score within ten minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from challenges.framework.loader import challenge_folders, load_challenge
from crew.run.rundir import RunDir

LIMIT_S = 600


def run_one(name: str, out: Path) -> dict:
    run_dir = out / name
    shutil.rmtree(run_dir, ignore_errors=True)
    command = [shutil.which("research-crew") or "research-crew", "run", name, "--preset", "smoke", "--model",
               "baseline", "--run-dir", str(run_dir)]
    started = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT_S)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    wall = time.monotonic() - started
    result_path = RunDir(run_dir).result
    result = json.loads(result_path.read_text()) if result_path.is_file() else {}
    score = result.get("score")
    ok = result.get("status") == "submitted" and score is not None and math.isfinite(score) and wall < LIMIT_S
    return {"challenge": name, "ok": ok, "exit": code, "status": result.get("status"), "score": score,
            "metric": result.get("metric", {}).get("name"), "wall_s": round(wall, 1),
            "run_elapsed_s": result.get("elapsed_s"), "run_dir": str(run_dir)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="default: every built-in challenge with a smoke preset")
    parser.add_argument("--out", type=Path, help="where the run directories go (default: a temporary folder)")
    args = parser.parse_args()
    names = args.names or [n for n, f in sorted(challenge_folders().items()) if "smoke" in load_challenge(f).presets]
    out = args.out or Path(tempfile.mkdtemp(prefix="smoke-all-"))
    rows = []
    for name in names:
        row = run_one(name, out)
        rows.append(row)
        score = "n/a" if row["score"] is None else f"{row['score']:.4f}"
        print(f"{name:24s} {'ok ' if row['ok'] else 'FAIL'} status={row['status']} {row['metric']}={score} "
              f"wall={row['wall_s']:.0f}s", flush=True)
    print(json.dumps(rows, indent=2))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
