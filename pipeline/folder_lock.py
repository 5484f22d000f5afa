"""One process at a time in a GPU step's output folder: an exclusive lock (fcntl.flock, never waiting) on a lock file
there, held for the step's whole life. A second process on the same folder (a cluster job requeued while the first
still runs, a command started twice) stops at once with FolderLockedError, and never appends to the first one's
partial file.

The lock file holds the holder's process id and host, for the error; it is removed when the step ends (while still
held: a process that opened it just before finds, once it has the lock, that the path names another file or none,
and tries again), so that a finished folder has no lock file to be sealed with its data. flock on a network file
system locks across machines only where the file system supports it (Linux's NFS client maps it to NFS locks).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from pathlib import Path


class FolderLockedError(RuntimeError):
    pass


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "a process that has not yet written its id"
    except OSError:
        return "unknown"


@contextlib.contextmanager
def held(path: Path, program: str):
    """Hold an exclusive lock on path (made if missing) for the with block; raise FolderLockedError naming it and
    its holder if another process holds it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderLockedError(
                f"another process holds {path} ({_holder(path)}): a {program} is already running on "
                f"{path.parent}, and two writers would mix their rows. Wait for it to end (or stop it); a lock file "
                f"that no running process holds is no obstacle") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)                      # removed (and perhaps made again) by its last holder: try again
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)
