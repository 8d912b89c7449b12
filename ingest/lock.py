"""One writer per home: an advisory lock file that an ingestion run holds from start to end.

Two `rag ingest` runs on one `RAG_HOME` would otherwise write the same store and manifest at once (the
embedded Chroma store and the SQLite manifest are not made for two writing processes: one of them ends
with "database is locked", or the store holds half of each run). The second run waits for the first,
saying so, or gives up after a timeout with a one-line error. The lock is `flock` on a file: the
operating system releases it when the holding process ends, even on `kill -9`, so a crash never leaves
a stale lock behind. It is advisory: only code that takes it (every `rag ingest`) is kept out.

Example:
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as home:
    ...     with HomeLock(os.path.join(home, "ingest.lock")) as lock:
    ...         lock.held
    True
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType

from rag.errors import IngestError

__all__ = ["HomeLock", "HomeLockedError"]

_POLL_S = 0.1


class HomeLockedError(IngestError):
    """Another process held the home's lock for longer than the timeout. `.path` is the lock file."""


class HomeLock:
    """An exclusive advisory lock on `path`, held until `release()` (or the end of a `with` block).

    Args:
        path: the lock file (created if missing; it records the holder's process id).
        timeout_s: how long to wait for another holder; None waits as long as it takes, 0 not at all.
        on_wait: called once with a message when the lock is busy and the wait begins.

    Example:
        >>> lock = HomeLock("/tmp/home/ingest.lock", timeout_s=30, on_wait=print)  # doctest: +SKIP
        >>> with lock:  # doctest: +SKIP
        ...     ...  # the only writer of this home
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout_s: float | None = None,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout_s = timeout_s
        self.on_wait = on_wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> HomeLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, waiting for another holder as `timeout_s` allows.

        Raises:
            HomeLockedError: the lock was still held when the timeout ran out.
            IngestError: the lock file cannot be created.
        """
        import fcntl

        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise IngestError(f"cannot create the lock file {self.path!r}: {exc}", path=self.path) from exc
        deadline = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise HomeLockedError(
                        f"another ingestion ({self._holder()}) is writing to this home; gave up after "
                        f"{self.timeout_s:g} s waiting for {self.path!r} (--lock-timeout)",
                        path=self.path,
                    ) from None
                if not told and self.on_wait is not None:
                    self.on_wait(f"waiting for another ingestion ({self._holder()}) to finish with this home")
                told = True
                time.sleep(_POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Let the next writer in (safe to call when not held)."""
        if self._fd is None:
            return
        import fcntl

        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _holder(self) -> str:
        """Who holds the lock, as far as the file says."""
        try:
            with open(self.path, encoding="ascii") as handle:
                pid = handle.read().strip()
        except (OSError, ValueError):
            pid = ""
        return f"process {pid}" if pid.isdigit() else "another process"
