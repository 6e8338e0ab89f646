"""Which subtasks may start at once: locally one engineer per GPU of this machine; with `--jobs slurm` the slots are
SLURM allocations, bounded by `--max-jobs`, whatever this machine's GPUs (a login node often has none)."""

from __future__ import annotations

from crew.loop.state import WorkerSlots


def test_local_engineers_are_bounded_by_the_gpus():
    assert WorkerSlots(gpus=0, running=["engineer"]).refusal("engineer").startswith(
        "1 engineer subtask(s) already under way (one per GPU and this run has no GPU)")
    two = WorkerSlots(gpus=2, running=["engineer"])
    assert two.refusal("engineer") is None
    two.reserve("engineer")
    assert "one per GPU and this run has 2 GPU" in two.refusal("engineer")


def test_on_slurm_engineers_are_bounded_by_the_runs_cluster_jobs_not_the_local_gpus():
    cluster = WorkerSlots(gpus=0, cluster_jobs=4, running=["engineer"])
    assert cluster.refusal("engineer") is None  # a second engineer, though this machine has no GPU
    cluster.reserve("engineer")
    assert cluster.refusal("engineer") is None  # a third
    cluster.reserve("engineer")
    assert cluster.refusal("engineer").startswith("3 subtasks are under way, the most at once (3)")
    one = WorkerSlots(gpus=2, cluster_jobs=1, running=["engineer"])  # local GPUs do not count on the cluster
    assert "at most one per job this run may hold on the cluster, 1 (--max-jobs)" in one.refusal("engineer")
    assert one.refusal("scout") is None and WorkerSlots(cluster_jobs=4, running=["scout"]).refusal("scout")
