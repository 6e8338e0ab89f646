"""Egress without the host: start a bwrap sandbox in a network namespace of its own and give it the internet
through slirp4netns with the host's loopback disabled. The agent reaches pip and the hub, but not a server
on the host's 127.0.0.1 (a local model server, a database) nor the host's abstract unix sockets, which live
in the host's network namespace.

Run as a script, in front of the bwrap command line: `python -I egress.py <bwrap argv...>`. The bwrap
arguments must carry `--info-fd 4 --block-fd 5`: bwrap reports its child's pid on fd 4 and waits on fd 5
until slirp4netns has set up the namespace's network. The script then waits for bwrap and returns its exit
code; slirp4netns ends with it (its --exit-fd closes when this process ends, however it ends). Only the
standard library: it runs with `python -I`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

INFO_FD, BLOCK_FD = 4, 5
SLIRP = ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback"]
DNS = "10.0.2.3"  # slirp4netns's DNS forwarder, the sandbox's resolv.conf names it


def _pipe_at(read_end: bool, target: int) -> int:
    """A pipe whose one end sits at fd `target` (for the child); returns the other end (ours). The targets
    are taken first, so that no pipe of ours lands on one of them."""
    r, w = os.pipe()
    child, ours = (r, w) if read_end else (w, r)
    os.dup2(child, target, inheritable=True)
    os.close(child)
    return ours


def _read_info(fd: int) -> dict:
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            continue
    raise RuntimeError("bwrap ended before it reported its pid")


def _wait_for_loopback(pid: int, timeout_s: float = 5.0) -> None:
    """bwrap sets up the namespace's loopback itself, before it waits on fd 5; slirp4netns configuring the same
    namespace meanwhile makes that fail now and then ("Failed RTM_NEWADDR"). So slirp4netns starts once
    127.0.0.1 is in place (or bwrap has gone)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if "127.0.0.1" in Path(f"/proc/{pid}/net/fib_trie").read_text():
                return
        except OSError:
            return
        time.sleep(0.005)


def main(argv: list[str]) -> int:
    # As bwrap itself: SIGTERM is for the command inside (the toolkit signals the whole group), not for us.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    placeholder = os.open(os.devnull, os.O_RDONLY)
    for fd in (INFO_FD, BLOCK_FD):
        if fd != placeholder:
            os.dup2(placeholder, fd)
    if placeholder not in (INFO_FD, BLOCK_FD):
        os.close(placeholder)
    info = _pipe_at(read_end=False, target=INFO_FD)
    block = _pipe_at(read_end=True, target=BLOCK_FD)
    bwrap = subprocess.Popen(argv, pass_fds=(INFO_FD, BLOCK_FD))
    os.close(INFO_FD)
    os.close(BLOCK_FD)
    try:
        pid = _read_info(info)["child-pid"]
    except (RuntimeError, KeyError, ValueError) as err:
        print(f"egress: {err}", file=sys.stderr)
        return bwrap.wait()
    _wait_for_loopback(pid)
    ready_r, ready_w = os.pipe()
    exit_r, exit_w = os.pipe()
    slirp = subprocess.Popen([*SLIRP, f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", str(pid), "tap0"],
                             pass_fds=(ready_w, exit_r), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    os.close(ready_w)
    os.close(exit_r)
    if os.read(ready_r, 1) != b"1":
        print("egress: slirp4netns did not start; the command runs without a network", file=sys.stderr)
    os.write(block, b"1")
    os.close(block)
    code = bwrap.wait()
    os.close(exit_w)  # slirp4netns exits
    try:
        slirp.wait(timeout=5)
    except subprocess.TimeoutExpired:
        slirp.kill()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
