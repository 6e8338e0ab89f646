"""A bench cell inside its SLURM job: `python -m crew.bench.slurm_cell BENCH_DIR CELL_NAME` starts the cell's
run, or resumes it when an earlier job got part of the way (a requeued or re-submitted job), in place of itself
so that SLURM's signals (scancel --signal, the time limit) reach the run directly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from crew.bench.plan import BenchSpec


def main(argv: list[str]) -> int:
    root, name = Path(argv[0]), argv[1]
    cells = [c for c in BenchSpec.load(root).cells(root) if c.name == name]
    if not cells:
        print(f"slurm_cell: no cell {name} in {root / 'bench.json'}", file=sys.stderr)
        return 2
    command = cells[0].command()
    print(f"slurm_cell: SLURM job {os.environ.get('SLURM_JOB_ID')} (restart "
          f"{os.environ.get('SLURM_RESTART_COUNT', '0')}): {' '.join(command[2:])}", flush=True)
    os.execv(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
