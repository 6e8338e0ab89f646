"""`research-crew bench status BENCH_DIR` (and `status BENCH_DIR`): each cell's state from its run directory, and
SLURM's view of the job that runs it (pending in queue with the reason and position, running on a node) while squeue
lists that job."""

from __future__ import annotations

from pathlib import Path

from crew.bench.plan import BenchSpec
from crew.bench.slurm import cell_job
from toolkit import slurm


def bench_status(root: Path) -> str:
    cells = BenchSpec.load(root).cells(root)
    jobs = {cell.name: job for cell in cells if (job := cell_job(root / "slurm", cell))}
    live = slurm.queue(jobs.values()) if jobs and slurm.available() else {}
    lines = [f"bench {root}: {len(cells)} cells"]
    for cell in cells:
        entry = live.get(jobs.get(cell.name, ""))
        lines.append(f"{cell.name}: {entry.describe() if entry else cell.state()}")
    counts = {}
    for line in lines[1:]:
        word = line.split(": ", 1)[1].split(" ")[0]
        counts[word] = counts.get(word, 0) + 1
    lines.append(", ".join(f"{n} {word}" for word, n in counts.items()))
    return "\n".join(lines)
