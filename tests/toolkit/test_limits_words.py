"""`doctor`'s words on the resource limits say which mechanism applies here and that it binds root."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit import limits


def test_the_limits_in_force_are_named_by_their_mechanism(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    processes, memory = limits.describe(64, 1 << 30, tag="words-test")
    probe = limits.pids_parent("words-test-probe")
    limits.release(probe)
    if probe is not None:  # this machine lets the crew make pids cgroups
        assert "at most 64 per command or job, root's included" in processes
        assert "cgroup v1 pids hierarchy" in processes or "cgroup v2, pids delegated" in processes
    assert "RLIMIT_AS through prlimit" in memory and "root's included" in memory
    monkeypatch.setattr(limits, "CGROUP_ROOT", tmp_path)  # a machine with no cgroup file system at all
    processes, _ = limits.describe(64, None)
    assert processes.startswith("processes: NOT limited") and "RLIMIT_NPROC is not used" in processes
