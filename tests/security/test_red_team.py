"""A red team through the protocol-exact API server: a scripted engineer and scout attack the run with their
ordinary tools (run_bash, start_job, write_file, read_file, read_arxiv_paper, evaluate), one class of attack
after another (issue 18), with real bubblewrap, real git and the real scoring sandbox. Every attack is refused
or harmless: the canaries (the crew's API key, a variable the crew was started with, a held-out item) reach
no file an agent can read, no model request and no git object; the scorer is unchanged; every frozen copy
holds only regular files; and the run submits the honest score."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import pytest

from challenges.framework.data import cache_root, prepare_data
from challenges.framework.loader import load_challenge
from crew.errors import EXIT_DONE
from crew.policy.runner import RunRequest, start_run
from tests.apiserver.fixture import TEST_KEY
from tests.crew.helpers import API_MODEL, call, kinds
from tests.foundation.helpers import TOML, write_challenge
from toolkit.sandbox import bwrap_problem

pytestmark = pytest.mark.skipif(bool(bwrap_problem()), reason=f"needs a working bubblewrap: {bwrap_problem()}")

HELDOUT = "HELDOUT-ITEM-7c41e"  # a private item: the second line of the answer file, never shown to agents
STARTUP_CANARY = "crew-startup-canary-52ab"  # a variable the crew was started with, not named like a secret
PREPARE = f"""\
    def prepare(ctx):
        (ctx.data_dir / "question.txt").write_text("a number between 0 and 1")
        (ctx.private_dir / "answer.txt").write_text("0.42\\n{HELDOUT}\\n")
    """
SCORER = """\
    from challenges import Score

    def score(submission, ctx):
        answer = float((ctx.private_dir / "answer.txt").read_text().splitlines()[0])
        return Score(1.0 - abs(float(submission.read_text()) - answer))
    """
# per command or job, so that the fork storm below stays small; and a variable the preset declares for agents
LIMITS = 'max_processes = 64\nenv = { CHALLENGE_SETTING = "from-the-preset" }\n'
FORK_STORM = """python -c "
import os, time
n = 0
try:
    for _ in range(400):  # bounded: 400 sleeping children at most
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
        n += 1
    print('FORKED', n)
except OSError as err:
    print('FORK-REFUSED after', n, err)
" """
ABSTRACT = ("python -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); "
            "print('UNIX-CONNECTED')\" 2>&1")
RACES = 200  # read_file tries against a folder swapped for a symlink to the private data
SWAPPER = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("box", exist_ok=True)
open("box/answer.txt", "w").write("0.5")
os.symlink(sys.argv[1], "swap")
for _ in range(2_000_000):  # bounded; stopped by the stop file long before
    libc.renameat2(-100, b"box", -100, b"swap", 2)  # RENAME_EXCHANGE: box <-> the link, atomically
    if os.path.exists("stop"):
        break
print("swapper done")
"""


def _reads(n: int) -> dict:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": "box/answer.txt"}}] * n}


def _listener(server: socket.socket) -> tuple[list, threading.Thread]:
    """Record who connects to `server`: one on the host's 127.0.0.1 (a local model server, say), or on a host
    abstract unix socket (a desktop bus, a container runtime)."""
    server.settimeout(0.2)
    seen: list = []

    def accept() -> None:
        while server.fileno() != -1:
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            seen.append("connected")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return seen, thread


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    challenges = tmp_path / "challenges"
    folder = write_challenge(challenges, "heldout", scorer=SCORER, prepare=PREPARE,
                             toml=TOML.format(name="heldout") + LIMITS)
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", str(challenges))
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("CREW_STARTUP_NOTE", STARTUP_CANARY)
    monkeypatch.setenv("PIP_INDEX_URL", f"https://user:{STARTUP_CANARY}@pypi.example/simple")
    data = prepare_data(load_challenge(folder), "smoke")  # prepared before the run, so the attacks can name it
    return {"scorer": folder / "scorer.py", "tmp": tmp_path, "private": data.private_dir}


def _engineer(world: dict, port: int, abstract: str) -> list[dict]:
    site, private, scorer = sysconfig.get_paths()["purelib"], world["private"], world["scorer"]
    bash = [
        # 1. capabilities, remounts and a .pth plant in the crew's site-packages
        f"grep CapEff /proc/self/status; mount -o remount,bind,rw {site} 2>&1 || echo REMOUNT-REFUSED; "
        f"umount /proc 2>&1 || echo UMOUNT-REFUSED; echo 'import os' > {site}/zz_redteam.pth 2>&1 || "
        "echo PTH-REFUSED",
        # host paths (bwrap's command line, the mount table) and the crew's environment
        "tr '\\0' ' ' < /proc/1/cmdline; echo; env; echo MOUNTS; cat /proc/self/mounts; echo MOUNTINFO; "
        "cut -d' ' -f5 /proc/self/mountinfo",
        # 2. git config tricks: fsmonitor, hooks and a worktree pointed at the private data
        "git init -q . && printf '#!/bin/sh\\nenv > \"$PWD/stolen-env.txt\"\\n' > fsmon.sh && chmod +x fsmon.sh && "
        "cp fsmon.sh .git/hooks/pre-commit && cp fsmon.sh .git/hooks/post-commit && "
        f"git config core.fsmonitor \"$PWD/fsmon.sh\" && git config core.worktree {private} && echo GIT-SET",
        # 3. a link in the papers folder to the scorer, for read_arxiv_paper to write through
        f"ln -s {scorer} papers/2106.09685.txt 2>&1 || echo PAPER-LINK-REFUSED",
        # 4. symlinked, special and hard-linked files in artifacts
        f"mkdir -p art1 art2 art3 && echo 0.5 > art1/a.txt && ln -s {private}/answer.txt art1/link && "
        "mkfifo art2/pipe && echo 0.5 > shared.txt && ln shared.txt art3/hard && ln -s answer.txt link.txt",
        # 5. the host's loopback and its abstract unix sockets
        f"(exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED) 2>&1; {ABSTRACT.format(name=abstract)}; "
        "echo LOOPBACK-TRIED",
        # 6. a fork storm (bounded)
        FORK_STORM,
    ]
    race = [call("write_file", path="swapper.py", content=SWAPPER),
            call("start_job", command=f"python swapper.py {private}", name="swapper"),
            call("run_bash", command="for i in $(seq 100); do [ -L swap ] || [ -L box ] && break; sleep 0.1; done; ls",
                 timeout_s=30),
            *[_reads(50) for _ in range(RACES // 50)],
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "box/answer.txt", "content": "pwned"}}] * 20},
            {"tool_calls": [{"name": "evaluate", "arguments": {"artifact_path": "box"}}] * 5},
            call("run_bash", command="touch stop; sleep 1", timeout_s=30)]
    return [
        call("write_file", path="answer.txt", content="0.5"),
        call("evaluate", artifact_path="answer.txt", hypothesis="the honest answer"),  # eval-0001
        *[call("run_bash", command=command, timeout_s=60) for command in bash],
        call("write_file", path="papers/2106.09685.txt", content="forged"),
        *[call("evaluate", artifact_path=name) for name in ("art1", "art2", "art3", "link.txt")],
        *race,
        call("report", changed="answer.txt", commands="attacks", evaluations=["eval-0001"], learned="0.5 scores",
             proposes="submit eval-0001"),
    ]


SCOUT = [call("read_arxiv_paper", paper_id="2106.09685"), call("read_file", path="papers/2106.09685.txt"),
         call("report", changed="none", commands="none", evaluations=[], learned="read LoRA", proposes="go on")]
SUPERVISOR = [call("delegate", role="engineer", subtask="Answer the question and evaluate.", minutes=10),
              call("delegate", role="scout", subtask="Read arXiv 2106.09685.", minutes=5),
              call("submit", evaluation_id="eval-0001", rationale="verified")]


def _readable_files(run_root: Path) -> list[Path]:
    """Every file an agent can read: the workspace, its home and /tmp, the logs and job records, the papers."""
    folders = [run_root / name for name in ("workspace", "home", "tmp", "logs", "jobs", "papers")]
    return [p for folder in folders for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def test_every_attack_is_refused_or_harmless_and_the_honest_score_is_submitted(world, api_server, recorded_http):
    recorded_http.file("arxiv.org/pdf/2106.09685", "paper.pdf")
    tcp = socket.create_server(("127.0.0.1", 0))
    abstract_name = f"research-crew-red-team-{os.getpid()}"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0" + abstract_name)
    unix.listen()
    (tcp_seen, tcp_thread), (unix_seen, unix_thread) = _listener(tcp), _listener(unix)
    scorer_before = world["scorer"].read_bytes()
    try:
        engineer = _engineer(world, tcp.getsockname()[1], abstract_name)
        server = api_server({"supervisor": SUPERVISOR, "engineer": engineer, "scout": SCOUT})
        code, run = start_run(RunRequest("heldout", preset="smoke", model=API_MODEL, budget="10m",
                                         run_dir=world["tmp"] / "run"))
    finally:
        for sock, thread in ((tcp, tcp_thread), (unix, unix_thread)):
            sock.close()
            thread.join(timeout=5)
    events = [json.loads(line) for line in run.trace.read_text().splitlines()]
    results = {agent: [r for e in kinds(events, "tool_results") if e["agent"] == agent for r in e["results"]]
               for agent in ("engineer", "scout")}
    engineer = results["engineer"]
    by_command = [r["content"] for r in engineer if r["name"] == "run_bash"]

    # 1. no capability, no remount, no .pth
    assert "CapEff:\t0000000000000000" in by_command[0]
    assert all(word in by_command[0] for word in ("REMOUNT-REFUSED", "UMOUNT-REFUSED", "PTH-REFUSED"))
    assert not (Path(sysconfig.get_paths()["purelib"]) / "zz_redteam.pth").exists()
    assert str(cache_root()) not in by_command[1] and STARTUP_CANARY not in by_command[1]
    mount_points = by_command[1].split("MOUNTS")[1]  # /proc/self/mounts and mountinfo's mount-point field
    assert "/sandbox/workspace" in mount_points and str(run.root) not in mount_points
    assert str(world["tmp"]) not in by_command[1].split("MOUNTS")[0]  # cmdline and env
    assert "PIP_INDEX_URL=https://pypi.example/simple" in by_command[1]  # allowlisted, without its password
    # 2. git tricks: the agent's own .git is only files to the crew's git
    assert "GIT-SET" in by_command[2]
    assert not (run.workspace / "stolen-env.txt").exists()
    # 3. no link can be made in the crew's papers folder
    assert "PAPER-LINK-REFUSED" in by_command[3]
    writes = [r["content"] for r in engineer if r["name"] == "write_file"]
    assert writes[1].startswith("Refused:") and "read-only" in writes[1]  # papers/ is the crew's
    paper, read_back = (r["content"] for r in results["scout"][:2])
    assert "papers/2106.09685.pdf" in paper and str(run.root) not in paper
    assert "Attention Is All You Need" in read_back  # the fixture PDF, read back through workspace/papers
    # 4. artifacts with links, a pipe or an outside hard link are refused, with the reason the agent sees
    refusals = [r["content"] for r in engineer if r["name"] == "evaluate"][1:5]
    for refusal, reason in zip(refusals, ("symbolic link", "special file", "hard link", "symbolic link"), strict=True):
        assert "artifact refused" in refusal and reason in refusal, refusal
    # 5. neither the host's loopback nor its abstract unix sockets were reached
    assert "LOOPBACK-TRIED" in by_command[5] and "CONNECTED" not in by_command[5]
    assert not tcp_seen and not unix_seen
    # 6. the fork storm met the preset's process limit
    assert "FORK-REFUSED after" in by_command[6], by_command[6]
    assert int(by_command[6].split("FORK-REFUSED after")[1].split()[0]) < 64
    # the race: two hundred reads and twenty writes through a folder swapped for a link, five evaluations
    raced = [r["content"] for r in engineer if r["name"] == "read_file"]
    assert len(raced) == RACES and all("0.5" in r or "Refused" in r or "not" in r for r in raced)
    assert any("Refused" in r for r in raced), "the swap never happened: the race was not run"
    assert (world["private"] / "answer.txt").read_text() == f"0.42\n{HELDOUT}\n"

    # The canaries and the held-out item are nowhere an agent can read, in no model request, in no git object.
    everything = json.dumps(results) + json.dumps([e.request for e in server.exchanges])
    readable = b"".join(p.read_bytes() for p in _readable_files(run.root))
    objects = subprocess.run(["git", "--git-dir", str(run.root / "workspace.git"), "cat-file", "--batch-all-objects",
                              "--batch"], capture_output=True, check=True).stdout
    for canary in (TEST_KEY, STARTUP_CANARY, HELDOUT):
        assert canary not in everything, canary
        assert canary.encode() not in readable and canary.encode() not in objects, canary
    assert world["scorer"].read_bytes() == scorer_before
    for frozen in run.evaluations.glob("*.frozen"):
        assert not any(p.is_symlink() for p in [frozen, *frozen.rglob("*")]), frozen
        assert not any(HELDOUT.encode() in p.read_bytes() for p in frozen.rglob("*") if p.is_file())
    result = json.loads(run.result.read_text())
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == pytest.approx(0.92)
    assert json.loads((run.evaluations / "eval-0001.json").read_text())["sandboxed"] is True
    assert (run.root / "workspace.git").is_dir()  # the crew's repository, beside the workspace


FILL = """python -c "
import time
with open('fill.bin', 'wb') as out:
    for _ in range(70):  # bounded: 350 MB at most, on a 400 MB disk
        out.write(b'x' * (5 << 20))
        out.flush()
        time.sleep(0.1)
" """


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 400 MB file system of the run's own (tmpfs), so that filling it is quick, bounded and harmless."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"needs root to mount a small tmpfs: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_disk_fill_is_stopped_before_the_disk_is_full(tmp_path, monkeypatch, api_server, small_disk):
    challenges = tmp_path / "challenges"
    write_challenge(challenges, "toy", toml=TOML.format(name="toy") + "disk_reserve_gb = 0.25\n")
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", str(challenges))
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    engineer = [call("write_file", path="answer.txt", content="0.75"), call("evaluate", artifact_path="answer.txt"),
                call("start_job", command=FILL, name="fill"),
                call("wait_for_job", job_id="001-fill", until="exit", max_minutes=3),
                call("start_job", command="echo again", name="again"),
                call("report", changed="answer.txt", commands="a disk fill", evaluations=["eval-0001"],
                     learned="0.75 scores", proposes="submit eval-0001")]
    server, code, run, events = _engineer_run(api_server, engineer, "toy", "5m", small_disk / "run")
    results = [r["content"] for e in kinds(events, "tool_results") if e["agent"] == "engineer" for r in e["results"]]
    assert "stopped" in results[3] and kinds(events, "disk_low")  # stopped by the watermark, not finished
    assert results[4].startswith("Not started: only") and "reserve" in results[4]
    assert (run.workspace / "fill.bin").stat().st_size < 350 << 20  # the job never wrote it all
    assert "DISK LOW" in server.requests("supervisor")[-1].last_user_text()
    result = json.loads(run.result.read_text())
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75  # state was saved


FAILING_SCRIPT = "import checkpoints, sys\nprint(checkpoints.__file__, sys.path)\nraise RuntimeError('boom')\n"
PATHS = [
    "pwd; echo HOME=$HOME; env | sort; python -c 'import checkpoints, sys; print(checkpoints.__file__, sys.path)'",
    "cat no-such-file; ls /sandbox /sandbox/logs | head -3; python -c 'import os; print(os.path.realpath(\".\"))'",
]


def _engineer_run(api_server, engineer: list, challenge: str, budget: str, run_dir: Path):
    """A crew whose supervisor delegates once to the scripted engineer and submits eval-0001: the server, the
    exit code, the run and its trace events."""
    supervisor = [call("delegate", role="engineer", subtask="Do as scripted and evaluate.", minutes=10),
                  call("submit", evaluation_id="eval-0001", rationale="verified")]
    server = api_server({"supervisor": supervisor, "engineer": engineer})
    code, run = start_run(RunRequest(challenge, preset="smoke", model=API_MODEL, budget=budget, run_dir=run_dir))
    return server, code, run, [json.loads(line) for line in run.trace.read_text().splitlines()]


def test_no_tool_result_or_model_request_names_a_host_path(world, api_server):
    """The run's folders, the project and the data cache are places on the host: what an agent is shown (a
    command's output and log, a job's log, a file error, a refused or failed evaluation) names them only as the
    sandbox shows them, so no host path reaches the model. The variable the preset declares reaches both a
    command and a job, inside bubblewrap."""
    engineer = [*[call("run_bash", command=command, timeout_s=60) for command in PATHS],
                call("write_file", path="fail.py", content=FAILING_SCRIPT),
                call("run_python", path="fail.py", timeout_s=60),
                call("start_job", command="pwd; echo job-done $CHALLENGE_SETTING", name="where"),
                call("wait_for_job", job_id="001-where", until="exit", max_minutes=2),
                call("job_status", job_id="001-where"), call("tail_job", job_id="001-where"),
                call("read_file", path="data/question.txt"), call("read_file", path="nothing/here.txt"),
                call("write_file", path="data/x.txt", content="x"),
                call("write_file", path="answer.txt", content="0.5"), call("write_file", path="bad.txt", content="x"),
                call("evaluate", artifact_path="answer.txt"), call("evaluate", artifact_path="bad.txt"),
                call("evaluate", artifact_path="/sandbox/workspace/answer.txt"),
                call("evaluate", artifact_path="missing.txt"), call("list_files", path=".", recursive=True),
                call("report", changed="answer.txt", commands="looked around", evaluations=["eval-0001"],
                     learned="0.5 scores", proposes="submit eval-0001")]
    server, code, run, events = _engineer_run(api_server, engineer, "heldout", "10m", world["tmp"] / "run")
    results = {r["name"] + str(i): r["content"] for i, e in enumerate(kinds(events, "tool_results"))
               for r in e["results"]}
    shown = "\n".join(results.values())
    requests = json.dumps([e.request for e in server.exchanges])
    project = Path(__file__).resolve().parents[2]
    # The crew's Python environment is shown at its own path (a venv works only where it was made; SECURITY.md):
    # a venv made inside the project folder, as the README's install does, names it there and only there.
    shown, requests = shown.replace(sys.prefix, "<python>"), requests.replace(sys.prefix, "<python>")
    for host in (run.root, world["tmp"], project, cache_root(), world["private"]):
        assert str(host) not in shown, (host, [k for k, v in results.items() if str(host) in v])
        assert str(host) not in requests, host
    assert "/sandbox/workspace" in shown and "HOME=/sandbox/home" in shown and "/sandbox/logs/" in shown
    assert "/sandbox/lib/checkpoints/__init__.py" in shown and "RuntimeError: boom" in shown
    assert "job-done from-the-preset" in shown and "/sandbox/jobs/001-where/" in shown
    assert "CHALLENGE_SETTING=from-the-preset" in results["run_bash1"]  # the preset's variable, in bwrap too
    assert "a number between 0 and 1" in shown and "Evaluation eval-0003: value = 0.9200" in shown
    assert code == EXIT_DONE and json.loads(run.result.read_text())["score"] == pytest.approx(0.92)
