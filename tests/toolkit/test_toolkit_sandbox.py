"""The agents' sandbox with real bubblewrap: what a command sees and cannot reach, the network switch,
GPU device nodes, masks over hidden places, and the file tools' view of the bound data."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import psutil
import pytest

import toolkit
from toolkit import Toolkit, ToolkitError
from toolkit.sandbox import SandboxPolicy, bwrap_problem
from toolkit.sandbox_mounts import mask_args

needs_bwrap = pytest.mark.skipif(bool(bwrap_problem()), reason=f"needs a working bubblewrap: {bwrap_problem()}")


@pytest.fixture
def snoop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A data cache with held-out answers next to the data, a home with a key, a secret in the environment,
    and a sandboxed toolkit whose data is that cache's data folder."""
    cache = tmp_path / "cache"
    (cache / "data").mkdir(parents=True)
    (cache / "private").mkdir()
    (cache / "data" / "train.txt").write_text("hello data\n")
    (cache / "private" / "answers.txt").write_text("HELD-OUT-ANSWER\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET")
    monkeypatch.setenv("RESEARCH_CREW_CACHE", str(cache))
    tk = Toolkit(tmp_path / "run", data_dir=cache / "data", sandbox=SandboxPolicy(hidden=(cache,)))
    return tk, cache, home


def _out(tk: Toolkit, command: str) -> str:
    result = tk.run_bash(command, timeout_s=60)
    return str(result)


@needs_bwrap
def test_a_command_sees_the_workspace_and_the_data_read_only_and_nothing_behind_them(snoop) -> None:
    tk, cache, home = snoop
    assert "hello data" in _out(tk, "cat data/train.txt")
    assert "Read-only file system" in _out(tk, "touch data/new.txt")
    for path in ("data/../private/answers.txt", f"{cache}/private/answers.txt"):
        seen = _out(tk, f"cat {path}")
        assert "No such file or directory" in seen and "HELD-OUT" not in seen
    assert tk.run_bash("ls data/..", timeout_s=60).output.split() == ["data", "papers"]  # data/.. is the workspace
    seen = _out(tk, f"cat ~/.ssh/id_rsa {home}/.ssh/id_rsa; echo HOME=$HOME")
    assert "PRIVATE-KEY" not in seen and seen.count("No such file or directory") == 2
    assert "HOME=/sandbox/home" in seen
    assert "Read-only file system" in _out(tk, "touch /usr/pwned /etc/pwned")


@needs_bwrap
def test_other_runs_and_this_runs_own_records_are_invisible(snoop) -> None:
    tk, cache, _ = snoop
    other = cache.parent / "other-run"
    other.mkdir()
    (other / "result.json").write_text("{}")
    (tk.run_dir / "state").mkdir()
    (tk.run_dir / "state" / "latest.json").write_text("{}")
    (tk.run_dir / "trace.jsonl").write_text("{}")
    for host in (cache.parent, tk.run_dir):  # the run's folders are inside at /sandbox, not at their host paths
        assert "No such file or directory" in _out(tk, f"ls -A {host}")
    assert sorted(tk.run_bash("ls -A /sandbox", timeout_s=60).output.split()) == ["home", "jobs", "lib", "logs",
                                                                               "workspace"]


@needs_bwrap
def test_the_crew_process_is_out_of_reach(snoop) -> None:
    tk, _, _ = snoop
    crew = os.getpid()
    seen = _out(tk, f"cat /proc/{crew}/environ /proc/{crew}/cmdline; ls /proc/{crew}/cwd; kill -TERM {crew}; "
                    "env; ls /proc")
    assert "sk-ant-SECRET" not in seen and "ANTHROPIC_API_KEY" not in seen
    assert seen.count("No such file or directory") == 3 and "No such process" in seen
    assert "RESEARCH_CREW_" not in seen  # the crew's own settings stay outside
    pids = [line for line in seen.splitlines() if line.isdigit()]
    assert pids and all(int(p) < 10 for p in pids)  # only the sandbox's own pid namespace


@needs_bwrap
def test_project_source_is_hidden_but_checkpoints_training_is_importable(snoop) -> None:
    tk, _, _ = snoop
    source = Path(toolkit.__file__).parent
    seen = _out(tk, f"cat {source}/sandbox.py; python -c 'import toolkit.sandbox'")
    assert "No such file or directory" in seen and "No module named 'toolkit'" in seen
    # checkpoints.training itself imports torch (seconds); finding it and importing the package is enough here.
    seen = _out(tk, "python -c 'import importlib.util as u, checkpoints; print(u.find_spec(\"checkpoints.training\")"
                    ".origin)'")
    assert seen.strip().endswith("checkpoints/training.py"), seen


@needs_bwrap
def test_a_runs_requirements_folder_is_importable_inside_though_the_cache_is_hidden(tmp_path: Path) -> None:
    """`run --install-requirements` installs into a folder under the (hidden) data cache: commands see that
    folder alone, read-only, first on their path; the private answers beside it stay invisible."""
    cache = tmp_path / "cache"
    requirements = cache / "envs" / "abc"
    requirements.mkdir(parents=True)
    (requirements / "only_in_requirements.py").write_text("VALUE = 'from the requirements folder'\n")
    (cache / "private").mkdir()
    (cache / "private" / "answers.txt").write_text("HELD-OUT-ANSWER\n")
    tk = Toolkit(tmp_path / "run", sandbox=SandboxPolicy(hidden=(cache,), python_packages=(requirements,)))
    seen = _out(tk, f"python -c 'import only_in_requirements as m; print(m.VALUE)'; cat {cache}/private/answers.txt; "
                    f"touch {requirements}/planted.py")
    assert "from the requirements folder" in seen and "HELD-OUT-ANSWER" not in seen
    assert not (requirements / "planted.py").exists()


@needs_bwrap
def test_a_job_in_the_sandbox_cannot_signal_the_crew_and_sees_no_secret(snoop) -> None:
    tk, _, _ = snoop
    status = tk.start_job(f"kill -TERM {os.getpid()}; env", "snoop")
    record = json.loads((tk.run_dir / "jobs" / status.record.id / "job.json").read_text())
    assert any("bwrap --args 3" in arg for arg in record["argv"])  # the mount list goes through a descriptor
    assert not any("--ro-bind" in arg for arg in record["argv"])
    assert record["command"].startswith("kill")
    for _ in range(400):
        if not tk.job_status(status.record.id).running:
            break
        time.sleep(0.05)
    log = tk.tail_job(status.record.id, 100)
    assert "No such process" in log and "sk-ant-SECRET" not in log and "PATH=" in log


@needs_bwrap
def test_gpu_status_can_tell_a_sandboxed_jobs_processes(tmp_path: Path) -> None:
    tk = Toolkit(tmp_path / "run", job_grace_s=1, sandbox=SandboxPolicy())
    naps = [["sleep", f"{30 + i}.{os.getpid()}"] for i in range(2)]  # unique on a shared machine
    status = tk.start_job(" & ".join(" ".join(nap) for nap in naps), "holder")  # NVML reports host pids
    try:
        for _ in range(200):
            inside = [p for p in psutil.process_iter(["pid", "cmdline"]) if p.info["cmdline"] in naps]
            if len(inside) == 2:
                break
            time.sleep(0.05)
        owners = tk.jobs.running_pids()
        assert len(inside) == 2 and all(owners.get(p.info["pid"]) == status.record.id for p in inside)
    finally:
        tk.stop_job(status.record.id)


@needs_bwrap
@pytest.mark.parametrize("network", [True, False])
def test_agent_network_switch(tmp_path: Path, network: bool) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        tk = Toolkit(tmp_path / "run", sandbox=SandboxPolicy(network=network))
        seen = _out(tk, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")
    finally:
        server.close()
    assert ("CONNECTED" in seen) is network, seen


@needs_bwrap
def test_gpu_device_nodes_are_bound_in(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    (dev / "dri").mkdir()
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-caps/nvidia-cap1", "dri/card0"):
        (dev / name).write_text("")
    tk = Toolkit(tmp_path / "run", sandbox=SandboxPolicy(dev_root=dev))
    argv = tk.sandbox.args  # what bwrap reads through --args
    binds = {(argv[i + 1], argv[i + 2]) for i, arg in enumerate(argv) if arg == "--dev-bind"}
    assert binds == {(str(dev / n), f"/dev/{n}") for n in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-caps", "dri")}
    assert argv.index("--dev") < min(i for i, arg in enumerate(argv) if arg == "--dev-bind")  # on top of /dev
    seen = _out(tk, "ls /dev /dev/nvidia-caps /dev/dri")
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-cap1", "card0"):
        assert name in seen


@needs_bwrap
def test_a_hidden_folder_inside_a_shown_one_is_masked(tmp_path: Path) -> None:
    # As an installed package inside the Python the sandbox shows: here the standard library's json.
    package = Path(json.__file__).parent
    tk = Toolkit(tmp_path / "run", sandbox=SandboxPolicy(hidden=(package,)))
    seen = _out(tk, f"ls -A {package} | wc -l; touch {package}/x; python -c 'import json.decoder'")
    assert seen.split("\n")[1].strip() == "0"
    assert "Read-only file system" in seen and "No module named 'json.decoder'" in seen


def test_masks_apply_only_inside_shown_folders(tmp_path: Path) -> None:
    shown = tmp_path / "shown"
    (shown / "pkg").mkdir(parents=True)
    (shown / "secret.txt").write_text("x")
    (tmp_path / "elsewhere").mkdir()
    masks, remounts = mask_args([shown / "pkg", shown / "secret.txt", tmp_path / "elsewhere", shown / "gone"],
                                [shown])
    assert masks == ["--tmpfs", str(shown / "pkg"), "--ro-bind", "/dev/null", str(shown / "secret.txt")]
    assert remounts == ["--remount-ro", str(shown / "pkg")]


def test_file_tools_read_the_bound_data_and_refuse_writes_and_escapes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "data").mkdir(parents=True)
    (cache / "private").mkdir()
    (cache / "data" / "train.txt").write_text("hello data\n")
    (cache / "private" / "answers.txt").write_text("HELD-OUT-ANSWER\n")
    (cache / "data" / "leak").symlink_to(cache / "private")
    tk = Toolkit(tmp_path / "run", data_dir=cache / "data", sandbox=SandboxPolicy())
    mount_point = tk.workspace / "data"
    assert mount_point.is_dir() and not mount_point.is_symlink() and not any(mount_point.iterdir())
    assert "data/train.txt: lines 1-1" in tk.read_file("data/train.txt")
    assert "hello data" in tk.read_file(str(tk.workspace / "data" / "train.txt"))
    assert "train.txt" in tk.list_files("data")
    for path in ("data/leak/answers.txt", "data/../private/answers.txt", str(cache / "private" / "answers.txt")):
        assert tk.read_file(path).startswith("Refused:"), path
    assert tk.write_file("data/new.txt", "x").startswith("Refused:") and not (cache / "data" / "new.txt").exists()


def test_without_a_sandbox_the_data_is_a_link_and_a_sandboxed_restart_turns_it_into_a_mount_point(tmp_path):
    data = tmp_path / "cache" / "data"
    data.mkdir(parents=True)
    Toolkit(tmp_path / "run", data_dir=data)
    link = tmp_path / "run" / "workspace" / "data"
    assert link.is_symlink() and link.resolve() == data.resolve()
    Toolkit(tmp_path / "run", data_dir=data, sandbox=SandboxPolicy())
    assert link.is_dir() and not link.is_symlink()


def test_a_missing_bwrap_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert bwrap_problem() == "bubblewrap (bwrap) is not installed"


@needs_bwrap
def test_a_sandbox_that_cannot_start_is_named_when_the_toolkit_is_made(tmp_path: Path) -> None:
    with pytest.raises(ToolkitError, match="sandbox does not start: .*missing/data"):
        Toolkit(tmp_path / "run", data_dir=tmp_path / "missing" / "data", sandbox=SandboxPolicy())
