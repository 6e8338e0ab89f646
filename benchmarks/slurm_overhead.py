"""What running on SLURM costs against running locally, on the cluster of tests/cluster/slurm_up.sh (or any).

    tests/cluster/slurm_up.sh && python benchmarks/slurm_overhead.py [--repeats 3] [--partition P]

1. A crew job `sleep 1`: start_job to its recorded end, toolkit.jobs (local) against toolkit.slurm_jobs.
2. A smoke cell: a one-cell bench (`research-crew run` of a toy challenge's smoke preset, baseline policy, its
   recipe a 1-second Python script) with --executor local against --executor slurm.
3. A 6-cell smoke bench (that toy challenge, baseline and a replayed crew, 3 repeats) on both executors.
Each figure is the median of --repeats (3) runs (the 6-cell bench: of --bench-repeats, 1); local benches run
--parallel as many as the SLURM node has CPUs; both executors are
timed in the same process, interleaved, and the ratio printed beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ops.helpers import crew_script, toy_with_baseline  # noqa: E402
from toolkit import jobrecord as jr  # noqa: E402
from toolkit.jobs import JobManager  # noqa: E402
from toolkit.slurm_jobs import SlurmJobManager  # noqa: E402


def time_job(manager: JobManager, command: str) -> float:
    began = time.perf_counter()
    status = manager.start(command, "bench", deadline=None)
    while status.state not in jr.FINISHED:
        time.sleep(0.05)
        status = manager.status(status.record.id)
    if status.record.exit_code != 0:
        raise SystemExit(f"the job failed: {status}")
    return time.perf_counter() - began


def time_bench(root: Path, env: dict, args: list[str], out: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "crew.cli", "bench", *args, "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - began


def line(what: str, local: list[float], slurm: list[float]) -> str:
    a, b = statistics.median(local), statistics.median(slurm)
    return f"{what:<28} local {a:7.2f} s   slurm {b:7.2f} s   slurm/local {b / a:5.2f}x   (median of {len(local)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bench-repeats", type=int, default=1)
    parser.add_argument("--partition", default=None)
    args = parser.parse_args()
    slurm_opts = ["--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "1", "--time-margin", "5"]
    slurm_opts += ["--partition", args.partition] if args.partition else []
    results: dict[str, tuple[list[float], list[float]]] = {}
    cpus = int(subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0])
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:  # under the working folder: a path nodes may share
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        local = JobManager(root / "jobs-local", cwd=root, env=env)
        slurm = SlurmJobManager(root / "jobs-slurm", cwd=root, env=env, partition=args.partition)
        results["job `sleep 1`"] = ([], [])
        for _ in range(args.repeats):
            results["job `sleep 1`"][0].append(time_job(local, "sleep 1"))
            results["job `sleep 1`"][1].append(time_job(slurm, "sleep 1"))

        toy_with_baseline(root / "challenges", "toy", value="0.5", seconds=1.0)
        script = crew_script(root / "crew.yaml")
        env = {**env, "RESEARCH_CREW_CHALLENGE_PATH": str(root / "challenges"), "PYTHONPATH": str(ROOT),
               "RESEARCH_CREW_MEMORY_DIR": str(root / "memory"), "RESEARCH_CREW_CACHE": str(root / "cache")}
        one = ["--challenges", "toy", "--runs", "1", "--model", "baseline", "--budget", "10m"]
        six = ["--challenges", "toy", "--runs", "3", "--model", f"replay:{script}", "--budget", "10m"]
        for name, grid, repeats in (("smoke cell (1 run)", one, args.repeats),
                                    ("smoke bench (6 runs)", six, args.bench_repeats)):
            results[name] = ([], [])
            for n in range(repeats):
                results[name][0].append(time_bench(root, env, grid + ["--parallel", str(cpus)],
                                                   root / f"{name[:5]}-local-{n}"))
                results[name][1].append(time_bench(root, env, grid + slurm_opts, root / f"{name[:5]}-slurm-{n}"))
    print(f"SLURM node CPUs: {cpus}; local bench: --parallel {cpus}; slurm bench: 1 CPU per cell")
    for what, (a, b) in results.items():
        print(line(what, a, b))


if __name__ == "__main__":
    main()
