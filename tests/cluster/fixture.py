"""The one-node SLURM cluster for tests marked `slurm`: started by slurm_up.sh (idempotent: a cluster already up
is reused, and left up for the next test and the next session; slurm_down.sh stops it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

UP = Path(__file__).resolve().parent / "slurm_up.sh"
NEEDED = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "scancel", "sinfo", "srun")


@pytest.fixture(scope="session")
def slurm_cluster() -> str:
    """The cluster's partition; skips where SLURM is not installed (`tests/cluster/slurm_up.sh --install`)."""
    missing = [tool for tool in NEEDED if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"SLURM is not installed ({', '.join(missing)} missing): run tests/cluster/slurm_up.sh --install")
    proc = subprocess.run([str(UP)], capture_output=True, text=True, timeout=300)
    if proc.returncode == 2:  # a SLURM configured by someone else: not ours to restart
        pytest.skip(f"slurm_up.sh declined: {proc.stderr.strip()}")
    assert proc.returncode == 0, f"slurm_up.sh failed:\n{proc.stdout}{proc.stderr}"
    return "debug"
