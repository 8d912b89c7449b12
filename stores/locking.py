"""Locks the stores share: a readers-writer lock for threads and an exclusive lock file for processes.

`ReadWriteLock` lets any number of readers in at once and a writer alone. It is phase-fair: once a
writer waits, readers that arrive queue behind it, so a steady stream of searches cannot starve an
`add`; and when a writer releases, every reader that was waiting goes in before the next writer, so a
steady stream of writes cannot starve a search (a search waits for at most one write). A
thread may nest acquisitions (a read inside its own read or write, a write inside its own write), so a
store method can call another public one; a thread holding only a read lock cannot upgrade to a write
(that would deadlock against a second reader doing the same) and gets a `RuntimeError` instead.

`FolderLock` is an exclusive advisory lock on a file (`fcntl.flock`), held for the span of one
operation, so two processes (or two store objects in one process) never write the same folder at once.
On platforms without `fcntl` it only serialises the threads of one process.

`shared_lock(key)` and `shared_mutex(key)` hand every caller with an equal key the same lock while
any of them holds it, so two store objects over one folder, collection or table in a process exclude
each other as one store's threads do.

Example:
    >>> lock = ReadWriteLock()
    >>> with lock.read():
    ...     pass  # any number of threads search here together
    >>> with lock.write():
    ...     pass  # one thread at a time changes the store here
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Hashable
from pathlib import Path
from types import TracebackType

__all__ = ["FolderLock", "ReadWriteLock", "shared_lock", "shared_mutex"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory file locks from the standard library
    fcntl = None  # type: ignore[assignment]


_registry_lock = threading.Lock()
_rw_locks: weakref.WeakValueDictionary[Hashable, ReadWriteLock] = weakref.WeakValueDictionary()
_mutexes: weakref.WeakValueDictionary[Hashable, _Mutex] = weakref.WeakValueDictionary()


class ReadWriteLock:
    """Many readers or one writer, phase-fair, re-entrant per thread (see the module docstring).

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

    def _read_depth(self) -> int:
        depth: int = getattr(self._local, "depth", 0)
        return depth

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
        if self._read_depth():
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

    def read(self) -> _Reading:
        """Hold the lock for reading inside the `with` block."""
        return _Reading(self)

    def write(self) -> _Writing:
        """Hold the lock for writing inside the `with` block."""
        return _Writing(self)


class _Reading:
    """`ReadWriteLock.read()` as a `with` block.

    A small class, not a `contextlib.contextmanager`: a generator-based manager builds a generator
    and its wrapper per `with` and steps through both, which cost a search a tenth of its own time.
    """

    __slots__ = ("_lock",)

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_read()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._lock.release_read()


class _Writing(_Reading):
    """`ReadWriteLock.write()` as a `with` block (see `_Reading`)."""

    __slots__ = ()

    def __enter__(self) -> None:
        self._lock.acquire_write()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._lock.release_write()


class FolderLock:
    """An exclusive lock on `folder / name` shared by processes, held inside a `with` block.

    The file is created when missing and left in place (removing it would let two processes lock two
    different files of one name). Each `with` opens the file anew, and flock excludes open files, so two
    threads (or two stores) of one process also take the lock in turn.

    Example:
        >>> import tempfile
        >>> with FolderLock(tempfile.mkdtemp()):
        ...     pass  # no other process writes the folder here
    """

    def __init__(self, folder: str | os.PathLike[str], name: str = ".lock") -> None:
        self.path = Path(folder) / name
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Create the file if needed and wait for the exclusive lock on it.

        Raises:
            OSError: the file cannot be created or opened (a read-only folder, say).
        """
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

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()


class _Mutex:
    """A re-entrant lock that can be weakly referenced (`threading.RLock` cannot).

    Re-entrant because a finalizer (a store closed by the garbage collector) may run in a thread
    that already holds it.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> _Mutex:
        self._lock.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._lock.release()


def shared_lock(key: Hashable | None) -> ReadWriteLock:
    """The `ReadWriteLock` of `key` in this process (a new private one for None).

    Example:
        >>> shared_lock(("chroma", "/data", "docs")) is shared_lock(("chroma", "/data", "docs"))
        True
    """
    if key is None:
        return ReadWriteLock()
    with _registry_lock:
        lock = _rw_locks.get(key)
        if lock is None:
            lock = _rw_locks[key] = ReadWriteLock()
        return lock


def shared_mutex(key: Hashable | None) -> _Mutex:
    """A mutual-exclusion lock for `key` in this process (a new private one for None), used with `with`."""
    if key is None:
        return _Mutex()
    with _registry_lock:
        mutex = _mutexes.get(key)
        if mutex is None:
            mutex = _mutexes[key] = _Mutex()
        return mutex
