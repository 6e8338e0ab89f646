"""File I/O beneath a trusted folder that never follows a link: for the crew's host-side work on files an
agent can change (the file tools, freezing an artifact).

Checking a path and then opening it by name loses to an agent that swaps a folder for a symlink in between.
Here every component is opened relative to the file descriptor of the one before, with O_NOFOLLOW, so a
link anywhere below the root is refused (ELOOP/ENOTDIR), whenever it appears; special files (FIFOs,
devices, sockets) are refused before anything blocks on them.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A link, a special file or a missing folder on the way: the message says which component."""


def _parts(rel: str | os.PathLike[str] | Sequence[str]) -> list[str]:
    parts = list(rel) if isinstance(rel, (list, tuple)) else [p for p in Path(rel).parts if p not in ("", ".")]
    if any(p in ("..", "/") or "/" in p for p in parts):
        raise LinkRefused(errno.EPERM, f"'{'/'.join(parts)}' leaves the folder")
    return parts


def _refusal(err: OSError, name: str, dir_fd: int) -> OSError:
    """A link met on the way becomes LinkRefused; anything else (a file where a folder should be) stays."""
    if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:  # a link now, or one a moment ago that was swapped back (a race): refused either way
            plain = not stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode) and (
                err.errno != errno.ENOTDIR or not stat.S_ISDIR(os.stat(name, dir_fd=dir_fd).st_mode))
        except OSError:
            plain = False
        if not plain:
            return LinkRefused(err.errno, f"'{name}' is a symbolic link; links are not followed")
    return OSError(err.errno, err.strerror, name)


def open_dir(root: Path, rel: str | os.PathLike[str] | Sequence[str] = (), *, create: bool = False) -> int:
    """A descriptor of the folder `rel` beneath `root`, opened without following links (created with
    `create`). The caller closes it."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in _parts(rel):
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                raise _refusal(err, part, fd) from None
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def parent_dir(root: Path, rel: str | os.PathLike[str] | Sequence[str], *,
               create: bool = False) -> Iterator[tuple[int, str]]:
    """(descriptor of the folder holding `rel`, its last component), closed on exit."""
    parts = _parts(rel)
    if not parts:
        raise LinkRefused(errno.EISDIR, "the folder itself is not a file")
    fd = open_dir(root, parts[:-1], create=create)
    try:
        yield fd, parts[-1]
    finally:
        os.close(fd)


def open_file(dir_fd: int, name: str) -> int:
    """A regular file in `dir_fd` opened for reading; links and special files refused, and never blocked on."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as err:
        raise _refusal(err, name, dir_fd) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise LinkRefused(errno.EINVAL, f"'{name}' is not a regular file")
    os.set_blocking(fd, True)
    return fd


def open_read(root: Path, rel: str | os.PathLike[str] | Sequence[str]) -> int:
    """A descriptor of the regular file `rel` beneath `root`, for reading; the caller closes it."""
    with parent_dir(root, rel) as (dir_fd, name):
        return open_file(dir_fd, name)


def read_bytes(root: Path, rel: str | os.PathLike[str] | Sequence[str]) -> bytes:
    with os.fdopen(open_read(root, rel), "rb") as handle:
        return handle.read()


def lstat(root: Path, rel: str | os.PathLike[str] | Sequence[str]) -> os.stat_result | None:
    """The entry itself (a link is reported as a link), or None when it does not exist."""
    parts = _parts(rel)
    if not parts:
        return os.stat(root)
    try:
        with parent_dir(root, parts) as (dir_fd, name):
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def write_bytes(root: Path, rel: str | os.PathLike[str] | Sequence[str], data: bytes) -> None:
    """Atomically replace `rel` with `data`, creating its folders; a link there is replaced, never followed."""
    with parent_dir(root, rel, create=True) as (dir_fd, name):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            raise


def unlink(root: Path, rel: str | os.PathLike[str] | Sequence[str]) -> None:
    with parent_dir(root, rel) as (dir_fd, name):
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            pass


def open_dir_at(dir_fd: int, name: str) -> int:
    """The folder `name` in `dir_fd`, not followed if it is a link."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        raise _refusal(err, name, dir_fd) from None


def copy_contents(src: int, dst: int) -> None:
    """Copy a regular file's bytes in the kernel: a reflink where the file system shares blocks, else
    copy_file_range, else a plain read/write loop."""
    import fcntl

    try:
        fcntl.ioctl(dst, 0x40049409, src)  # FICLONE
        return
    except OSError:
        pass
    try:
        while os.copy_file_range(src, dst, 1 << 30):
            pass
        return
    except OSError:
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        os.ftruncate(dst, 0)
    while chunk := os.read(src, 1 << 20):
        os.write(dst, chunk)
