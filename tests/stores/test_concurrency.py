"""The numpy store shared by threads and processes, and the locks that make it safe (issue 12).

Writers own their ids, so any interleaving of their operations must end equal to a serial replay
(`stores.testing.concurrency`); readers check every answer they get while the writers run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from rag.documents import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import StoreError
from stores import NumpyVectorStore
from stores.locking import FolderLock, ReadWriteLock
from stores.testing.concurrency import (
    WORDS,
    check_hit,
    fast_switching,
    lexical_scores,
    replay,
    run_threads,
    state,
    writer_plans,
)

MODEL = HashingEmbedding(dimensions=64)
ROOT = Path(__file__).resolve().parents[2]


# -- the lock itself -----------------------------------------------------------------------------------


def test_readers_hold_the_lock_together() -> None:
    lock = ReadWriteLock()
    both_inside = threading.Barrier(2, timeout=10)
    seen: list[bool] = []

    def reader() -> None:
        with lock.read():
            both_inside.wait()  # raises BrokenBarrierError if the other reader were kept out
            seen.append(True)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [True, True]


def test_a_writer_waits_for_readers_and_new_readers_wait_for_it() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    writer_queued = threading.Event()
    lock.acquire_read()

    def writer() -> None:
        writer_queued.set()
        with lock.write():
            order.append("write")

    def late_reader() -> None:
        with lock.read():
            order.append("late read")

    writing = threading.Thread(target=writer)
    writing.start()
    writer_queued.wait()
    _wait_until(lambda: lock.waiting()[0] == 1)  # the writer is queued behind the held read lock
    reading = threading.Thread(target=late_reader)
    reading.start()
    order.append("first read ends")
    lock.release_read()
    writing.join(10)
    reading.join(10)
    assert order == ["first read ends", "write", "late read"]


def _wait_until(condition: Callable[[], bool]) -> None:
    while not condition():
        threading.Event().wait(0.001)


def test_readers_waiting_for_a_write_go_before_the_next_writer() -> None:
    lock = ReadWriteLock()
    order: list[str] = []

    def reader() -> None:
        with lock.read():
            order.append("read")

    def writer() -> None:
        with lock.write():
            order.append("second write")

    lock.acquire_write()
    reading, writing = threading.Thread(target=reader), threading.Thread(target=writer)
    reading.start()
    _wait_until(lambda: lock.waiting()[1] == 1)
    writing.start()
    _wait_until(lambda: lock.waiting()[0] == 1)
    lock.release_write()
    reading.join(10)
    writing.join(10)
    assert order == ["read", "second write"]  # a stream of writes cannot starve searches


def test_nesting_is_allowed_but_upgrading_is_refused() -> None:
    lock = ReadWriteLock()
    with lock.write(), lock.read(), lock.write():
        assert lock.writer_is_current()
    assert not lock.writer_is_current()
    with lock.read(), lock.read(), pytest.raises(RuntimeError, match="upgrade"):
        lock.acquire_write()
    with lock.write():  # everything was released above
        pass


def test_folder_lock_excludes_another_process(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from stores.locking import FolderLock
        with FolderLock({str(tmp_path)!r}):
            print("locked", flush=True)
            sys.stdin.read()
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", code]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
    with subprocess.Popen(command, env=env, text=True, **pipes) as holder:  # type: ignore[call-overload]
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "locked"
        got = threading.Event()

        def take() -> None:
            with FolderLock(tmp_path):
                got.set()

        taker = threading.Thread(target=take)
        taker.start()
        assert holder.poll() is None and not got.is_set()  # held elsewhere: we cannot have it yet
        holder.stdin.close()  # the holder exits, releasing it
        taker.join(30)
        assert got.is_set()


# -- threads ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_writers_and_readers_end_like_a_serial_replay(seed: int) -> None:
    plans = writer_plans(seed, writers=4, steps=14)
    store = NumpyVectorStore(MODEL)
    with fast_switching():
        report = run_threads(store, plans, readers=2, seed=seed)
    assert report.errors == []
    assert report.reads > 0
    serial = replay(NumpyVectorStore(MODEL), plans)
    assert state(store) == state(serial)
    for words in (WORDS[:2], WORDS[3:6], WORDS[-2:]):
        query = " ".join(words)
        for mode in ("vector", "lexical", "hybrid"):
            request = SearchRequest(query, top_k=8, mode=mode)
            assert store.similarity_search(request) == serial.similarity_search(request)


def test_the_lexical_index_equals_a_fresh_one_after_a_concurrent_run() -> None:
    plans = writer_plans(11, writers=4, steps=14)
    store = NumpyVectorStore(MODEL)
    with fast_switching():
        assert run_threads(store, plans, readers=2).errors == []
    final = store.get()
    for query in ("alpha beta", "vector search index", "omega"):
        found = store.similarity_search(SearchRequest(query, top_k=10, mode="lexical"))
        assert [(d.id, d.score) for d in found] == lexical_scores(final, query, 10)


def test_saves_during_writes_are_consistent_and_never_collide(tmp_path: Path) -> None:
    plans = writer_plans(21, writers=2, steps=12)
    store = NumpyVectorStore(MODEL, path=tmp_path / "store")
    errors: list[BaseException] = []

    def save_repeatedly() -> None:
        try:
            for _ in range(6):
                store.save()
        except BaseException as exc:  # reported below
            errors.append(exc)

    savers = [threading.Thread(target=save_repeatedly) for _ in range(2)]
    with fast_switching():
        for thread in savers:
            thread.start()
        report = run_threads(store, plans, readers=1)
        for thread in savers:
            thread.join(60)
    assert errors == [] and report.errors == []
    saved = NumpyVectorStore.load(tmp_path / "store", MODEL)  # whichever save came last
    for document in saved.get(include_embeddings=True):
        assert check_hit(saved, document) is None
        assert document.embedding is not None
        assert float(document.embedding @ MODEL.embed([document.text])[0]) > 1 - 1e-5  # its own vector
    store.save()
    assert state(NumpyVectorStore.load(tmp_path / "store", MODEL)) == state(store)


# -- processes ----------------------------------------------------------------------------------------------


def test_a_stale_copy_does_not_overwrite_a_newer_save(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    first = NumpyVectorStore(MODEL, path=folder)
    first.add([Document("a", "alpha")])
    first.save()
    mine = NumpyVectorStore(MODEL, path=folder)
    theirs = NumpyVectorStore(MODEL, path=folder)
    theirs.add([Document("b", "beta")])
    theirs.save()
    mine.add([Document("c", "gamma")])
    with pytest.raises(StoreError, match="another writer saved there") as info:
        mine.save()
    assert str(folder) in str(info.value)
    assert [d.id for d in NumpyVectorStore.load(folder, MODEL).get()] == ["a", "b"]
    theirs.add([Document("d", "delta")])
    theirs.save()  # the copy that saved last stays current
    mine.save(overwrite=True)
    assert [d.id for d in NumpyVectorStore.load(folder, MODEL).get()] == ["a", "c"]


def test_a_new_store_does_not_replace_a_folder_saved_meanwhile(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    early = NumpyVectorStore(MODEL, path=folder)  # nothing saved there yet
    other = NumpyVectorStore(MODEL, path=folder)
    other.add([Document("b", "beta")])
    other.save()
    early.add([Document("a", "alpha")])
    with pytest.raises(StoreError, match=str(folder.name)):
        early.save()
    assert [d.id for d in NumpyVectorStore.load(folder, MODEL).get()] == ["b"]


_SAVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from rag.documents import Document
    from rag.embeddings import HashingEmbedding
    from rag.errors import StoreError
    from stores import NumpyVectorStore

    folder, name, other = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    store = NumpyVectorStore(HashingEmbedding(dimensions=64), path=folder)
    (folder.parent / f"{name}.loaded").touch()
    while not (folder.parent / f"{other}.loaded").exists():  # both hold the same copy before saving
        time.sleep(0.01)
    store.add([Document(name, f"written by {name}")])
    try:
        store.save()
    except StoreError as exc:
        print("refused", exc)
    else:
        print("saved")
    """
)


def test_two_processes_saving_one_folder_lose_nothing_silently(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    seed = NumpyVectorStore(MODEL, path=folder)
    seed.add([Document("base", "the first save")])
    seed.save()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(folder), name, other],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for name, other in (("one", "two"), ("two", "one"))
    ]
    outcomes = {}
    for name, run in zip(("one", "two"), runs, strict=True):
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        outcomes[name] = out
    saved = {name for name, out in outcomes.items() if out.startswith("saved")}
    refused = [out for out in outcomes.values() if out.startswith("refused")]
    assert len(saved) == 1 and len(refused) == 1, outcomes
    assert str(folder) in refused[0]
    assert [d.id for d in NumpyVectorStore.load(folder, MODEL).get()] == sorted({"base", *saved})
