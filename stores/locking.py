"""Locks the stores share: a readers-writer lock for threads and an exclusive lock file for processes."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["FolderLock", "ReadWriteLock"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory file locks from the standard library
    fcntl = None  # type: ignore[assignment]


class ReadWriteLock:
    """Many readers or one writer, re-entrant per thread, phase-fair: readers that arrive while a writer
    waits queue behind it, and when a writer releases, every reader that was waiting goes in before the
    next writer, so neither side starves. A thread may nest a read inside its own read or write and a
    write inside its own write; a read cannot upgrade to a write (two readers doing so would deadlock):
    that raises `RuntimeError`.

    Example:
        >>> lock = ReadWriteLock()
        >>> with lock.write(), lock.read():  # a writer may read what it is changing
        ...     lock.writer_is_current()
        True
    """

    def __init__(self) -> None:
        # Searches take the mutex itself (`with` on a `Lock` is C code; on a `Condition` it is Python).
        self._mutex = threading.Lock()
        self._condition = threading.Condition(self._mutex)
        self._readers = 0  # threads holding a read lock
        self._writer: int | None = None  # ident of the thread holding the write lock
        self._write_depth = 0
        self._waiting_writers = 0
        self._waiting_readers = 0
        self._releases = 0  # write releases so far: a reader waiting across one goes before writers
        self._entitled = 0  # readers waiting at the last write release that have not gone in yet
        self._local = threading.local()  # this thread's read depth

    def writer_is_current(self) -> bool:
        """Whether the calling thread holds the write lock."""
        return self._writer == threading.get_ident()

    def waiting(self) -> tuple[int, int]:
        """How many threads wait to write and how many to read (for diagnostics and tests)."""
        return self._waiting_writers, self._waiting_readers

    def acquire_read(self) -> None:
        """Wait until no writer holds or waits for the lock, then hold it for reading."""
        depth: int = getattr(self._local, "depth", 0)  # inlined: every search comes here
        if depth or self._writer == threading.get_ident():
            # Nested in this thread's own read or write: waiting for a queued writer would deadlock.
            self._local.depth = depth + 1
            return
        with self._mutex:
            if self._writer is not None or self._waiting_writers:
                self._wait_to_read()
            self._readers += 1
        self._local.depth = 1

    def _wait_to_read(self) -> None:
        ticket = self._releases
        self._waiting_readers += 1
        try:
            while self._writer is not None or (self._waiting_writers and self._releases == ticket):
                self._condition.wait()
        finally:
            self._waiting_readers -= 1
            if self._releases != ticket and self._entitled:
                self._entitled -= 1  # used its turn (or gave it up, interrupted)
                if not self._entitled:
                    self._condition.notify_all()

    def release_read(self) -> None:
        """Release one read acquisition of the calling thread."""
        depth: int = getattr(self._local, "depth", 0)
        if depth <= 0:
            raise RuntimeError("release_read() without a matching acquire_read()")
        self._local.depth = depth - 1
        if depth > 1 or self._writer == threading.get_ident():
            return
        with self._mutex:
            self._readers -= 1
            if not self._readers and self._waiting_writers:
                # Only writers wait for readers to leave (readers wait for writers alone).
                self._condition.notify_all()

    def acquire_write(self) -> None:
        """Wait until no other thread reads or writes, then hold the lock alone."""
        me = threading.get_ident()
        if self._writer == me:
            self._write_depth += 1
            return
        if getattr(self._local, "depth", 0):
            raise RuntimeError("a thread holding a read lock cannot take the write lock (no upgrades)")
        with self._condition:
            self._waiting_writers += 1
            try:
                while self._writer is not None or self._readers or self._entitled:
                    self._condition.wait()
            finally:
                self._waiting_writers -= 1
            self._writer, self._write_depth = me, 1

    def release_write(self) -> None:
        """Release one write acquisition of the calling thread."""
        if self._writer != threading.get_ident():
            raise RuntimeError("release_write() by a thread that does not hold the write lock")
        self._write_depth -= 1
        if self._write_depth:
            return
        with self._condition:
            self._writer = None
            self._releases += 1
            self._entitled = self._waiting_readers  # they go in before any other writer
            self._condition.notify_all()

    def read(self) -> _Held:
        """Hold the lock for reading inside the `with` block."""
        return _Held(self.acquire_read, self.release_read)

    def write(self) -> _Held:
        """Hold the lock for writing inside the `with` block."""
        return _Held(self.acquire_write, self.release_write)


class _Held:
    """A lock held inside a `with` block (a generator-based manager costs a search a tenth of its time)."""

    __slots__ = ("_acquire", "_release")

    def __init__(self, acquire: Callable[[], None], release: Callable[[], None]) -> None:
        self._acquire, self._release = acquire, release

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc_info: object) -> None:
        self._release()


class FolderLock:
    """An exclusive advisory lock (`fcntl.flock`) on `folder / name` shared by processes, held inside a
    `with` block (without `fcntl`, it only serialises one process's threads).

    The file is left in place (removing it would let two processes lock two files of one name). Each
    `with` opens it anew, so two threads or stores of one process also take the lock in turn.

    Example:
        >>> import tempfile
        >>> with FolderLock(tempfile.mkdtemp()):
        ...     pass  # no other process writes the folder here
    """

    def __init__(self, folder: str | os.PathLike[str], name: str = ".lock") -> None:
        self.path = Path(folder) / name
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Create the file if needed and wait for the exclusive lock on it (OSError if it cannot)."""
        if self._descriptor is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
        except BaseException:
            os.close(descriptor)
            raise
        self._descriptor = descriptor

    def release(self) -> None:
        """Give the lock up (closing the descriptor releases the flock)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
