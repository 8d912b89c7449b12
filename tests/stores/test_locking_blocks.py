"""`ReadWriteLock.read()` and `.write()` as `with` blocks: released on errors, and a writer queued
behind several readers goes in when the last one leaves."""

from __future__ import annotations

import threading

import pytest

from stores.locking import ReadWriteLock


def _write_in_thread(lock: ReadWriteLock) -> threading.Thread:
    def writer() -> None:
        with lock.write():
            pass

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("mode", ["read", "write"])
def test_an_error_inside_the_block_releases_the_lock(mode: str) -> None:
    lock = ReadWriteLock()
    with pytest.raises(KeyError), getattr(lock, mode)():
        raise KeyError("boom")
    assert not lock.writer_is_current() and lock.waiting() == (0, 0)
    writer = _write_in_thread(lock)
    writer.join(10)
    assert not writer.is_alive()  # another thread got the write lock


def test_a_queued_writer_enters_when_the_last_reader_leaves() -> None:
    lock = ReadWriteLock()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    leave_second = threading.Event()

    def second_reader() -> None:
        with lock.read():
            second_in.set()
            leave_second.wait(10)

    def first_reader() -> None:
        with lock.read():
            first_in.set()
        first_out.set()

    second = threading.Thread(target=second_reader, daemon=True)
    second.start()
    second_in.wait(10)
    lock.acquire_read()  # a third reader, this thread, held while the writer queues
    writer = _write_in_thread(lock)
    while not lock.waiting()[0]:
        threading.Event().wait(0.001)
    lock.release_read()
    first = threading.Thread(target=first_reader, daemon=True)
    first.start()  # arrives after the writer queued: waits behind it
    writer.join(0.2)
    assert writer.is_alive() and not first_in.is_set()  # the second reader still holds the lock
    leave_second.set()
    writer.join(10)
    first.join(10)
    assert not writer.is_alive() and first_out.is_set()
