"""PgVectorStore with many processes on one table: no lost or doubled document, no torn read, no crash damage.

Four writer processes add overlapping batches, wait for each other, then delete overlapping ranges and
add batches of their own, while two reader processes search in every mode and check that each batch is
seen whole or not at all. The final table must equal a serial replay in the numpy store: same documents,
same count, same BM25 scores (so the shared term statistics were neither lost nor counted twice). A
writer killed inside its transaction leaves the table exactly as before.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from stores import NumpyVectorStore, PgVectorStore

_ROOT = Path(__file__).resolve().parents[2]
MODEL = HashingEmbedding(dimensions=32)
T = TypeVar("T")
WRITERS = 4
BATCH = 30

_COMMON = """
    import sys, json
    from rag import Document, SearchRequest
    from rag.embeddings import HashingEmbedding
    from stores import PgVectorStore
    WORDS = ["alpha", "beta", "gamma", "delta", "river", "bank"]

    def shared(n):
        return Document(f"s{n:03d}", f"shared {WORDS[n % 6]} {WORDS[n % 4]} item", {"group": n % 5})

    def own(w, b, i):
        return Document(f"u{w}-{b}-{i:02d}", f"own {WORDS[i % 6]} {WORDS[(i + w) % 6]}", {"tag": f"{w}-{b}"})
"""

_WRITER = (
    _COMMON
    + """
    url, table, w = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = PgVectorStore(HashingEmbedding(dimensions=32), url=url, table=table)
    for start in range(w * 40, w * 40 + 80, 20):  # overlaps the next writer's range by 40
        store.add([shared(n) for n in range(start, start + 20)])
    print("phase1", flush=True)
    sys.stdin.readline()  # every writer finished phase 1
    removed = 0
    for b in range(5):
        store.add([own(w, b, i) for i in range(30)])
        lo = w * 40 + 10 + b * 12
        removed += store.delete([f"s{n:03d}" for n in range(lo, lo + 12)])  # overlaps the neighbours'
    removed += store.delete(filter=f"tag == '{w}-4' AND NOT tag != '{w}-4'")
    print(json.dumps({"removed": removed}), flush=True)
"""
)

_READER = (
    _COMMON
    + """
    import os, time
    url, table, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    store = PgVectorStore(HashingEmbedding(dimensions=32), url=url, table=table)
    searches = torn = 0
    deadline = time.monotonic() + 120
    while not os.path.exists(stop) and time.monotonic() < deadline:
        for mode in ("vector", "lexical", "hybrid"):
            store.similarity_search(SearchRequest("alpha river", top_k=10, mode=mode, filter="group != 2"))
            searches += 1
        for w in range(4):
            for b in range(5):
                if store.count(f"tag == '{w}-{b}'") not in (0, 30):
                    torn += 1
    print(json.dumps({"searches": searches, "torn": torn}), flush=True)
"""
)


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _serial_replay() -> tuple[NumpyVectorStore, int]:
    """The numpy store after the same operations one at a time; and how many shared ids get deleted."""
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(_COMMON), namespace)  # the same document definitions as the processes
    shared: Callable[[int], Document] = namespace["shared"]  # type: ignore[assignment]
    own: Callable[[int, int, int], Document] = namespace["own"]  # type: ignore[assignment]
    store = NumpyVectorStore(MODEL)
    for w in range(WRITERS):
        store.add([shared(n) for n in range(w * 40, w * 40 + 80)])
    deleted: set[str] = set()
    for w in range(WRITERS):
        for b in range(5):
            store.add([own(w, b, i) for i in range(BATCH)])
            lo = w * 40 + 10 + b * 12
            deleted |= {f"s{n:03d}" for n in range(lo, lo + 12)}
        store.delete(filter=f"tag == '{w}-4'")
    store.delete(sorted(deleted))
    present = {f"s{n:03d}" for n in range(WRITERS * 40 + 40)}
    return store, len(deleted & present) + WRITERS * BATCH


def test_four_writers_two_readers_equal_a_serial_replay(
    postgres_server_url: str, fresh_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = fresh_name("processes")
    PgVectorStore(MODEL, url=postgres_server_url, table=table).close()  # created once, up front
    stop = tmp_path / "stop"
    readers = [_spawn(_READER, postgres_server_url, table, str(stop)) for _ in range(2)]
    writers = [_spawn(_WRITER, postgres_server_url, table, str(w)) for w in range(WRITERS)]
    try:
        _run(writers, readers, stop, postgres_server_url, table)
    finally:
        stop.touch()
        _reap([*writers, *readers])


def _reap(procs: list[subprocess.Popen[str]]) -> None:
    """Kill what still runs and close every pipe (a failed assertion must not leak processes)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


def _run(
    writers: list[subprocess.Popen[str]],
    readers: list[subprocess.Popen[str]],
    stop: Path,
    postgres_server_url: str,
    table: str,
) -> None:
    for writer in writers:
        assert writer.stdout is not None and writer.stdin is not None
        line = writer.stdout.readline()
        assert line.strip() == "phase1", writer.stderr.read() if writer.stderr else ""
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    results = [writer.communicate(timeout=240) for writer in writers]
    stop.touch()
    seen = [reader.communicate(timeout=240) for reader in readers]
    assert [w.returncode for w in writers] == [0] * WRITERS, [err for _, err in results]
    assert [r.returncode for r in readers] == [0, 0], [err for _, err in seen]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in seen]
    assert all(report["searches"] > 0 for report in reports) and [r["torn"] for r in reports] == [0, 0]

    expected, removals = _serial_replay()
    assert sum(json.loads(out.strip().splitlines()[-1])["removed"] for out, _ in results) == removals
    with PgVectorStore(MODEL, url=postgres_server_url, table=table) as store:
        got = [(d.id, d.text, d.metadata) for d in store.get()]
        assert got == [(d.id, d.text, d.metadata) for d in expected.get()]
        assert store.count() == expected.count() and store.count("group == 1") == expected.count("group == 1")
        for mode in ("lexical", "vector", "hybrid"):
            request = SearchRequest("alpha river bank own", top_k=40, mode=mode)  # type: ignore[arg-type]
            found = [(d.id, round(d.score or 0.0, 9)) for d in store.similarity_search(request)]
            assert found == [(d.id, round(d.score or 0.0, 9)) for d in expected.similarity_search(request)]


_KILLED = """
    import sys
    from rag import Document
    from rag.embeddings import HashingEmbedding
    from stores import PgVectorStore
    store = PgVectorStore(HashingEmbedding(dimensions=32), url=sys.argv[1], table=sys.argv[2])
    replaced = Document("keep-0", "bank replaced", {"i": 0})
    store.add([replaced, *(Document(f"new-{i}", f"river bank number {i}", {"i": i}) for i in range(200))])
"""


def test_a_killed_writer_leaves_the_previous_state(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    """The test's own transaction locks the term row `river`: the writer's batch replaces keep-0 and adds
    documents holding `river`, so its transaction writes every row and posting, then waits on that lock
    while updating the document frequencies, before the statistics and the commit. Opening and reading the
    store take no row lock, so they must not wait for that writer, nor see its rows."""
    import psycopg
    from psycopg import sql

    table = fresh_name("killed")
    with (
        PgVectorStore(MODEL, url=postgres_server_url, table=table) as store,
        psycopg.connect(postgres_server_url) as holder,
        psycopg.connect(postgres_server_url, autocommit=True) as watcher,
    ):
        store.add([Document(f"keep-{i}", f"river water {i}", {"i": i}) for i in range(50)])
        request = SearchRequest("river bank", top_k=60, mode="hybrid")
        before = [(d.id, d.score) for d in store.similarity_search(request)]
        terms = sql.Identifier(f"{table}_terms")
        held = sql.SQL("SELECT term FROM {} WHERE term = 'river' FOR UPDATE").format(terms)
        assert holder.execute(held).fetchall() == [("river",)]
        child = _spawn(_KILLED, postgres_server_url, table)
        try:
            writer = _blocked_by(watcher, holder.info.backend_pid, child)
            _open_while_writing(postgres_server_url, table, watcher, writer, child, request, before)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
            assert child.returncode == -signal.SIGKILL
            _assert_before_the_write(store, request, before)  # its backend still waits, holding its locks
            holder.rollback()  # the backend runs on, finds its client gone and rolls back
            _until(lambda: _gone(watcher, writer), "the killed writer's backend ends", child)
        finally:
            _reap([child])
            holder.rollback()
        _assert_before_the_write(store, request, before)
        store.add([Document("after", "river bank after the crash")])  # its lock on the info row is gone
        assert store.count() == 51


def _open_while_writing(
    url: str,
    table: str,
    watcher: Any,
    writer: int,
    child: subprocess.Popen[str],
    request: SearchRequest,
    before: list[tuple[str, float | None]],
) -> None:
    """Open the store in a thread; fail as soon as the opening waits for the writer's locks."""
    opened: list[PgVectorStore] = []
    opener = threading.Thread(
        target=lambda: opened.append(PgVectorStore(MODEL, url=url, table=table)), daemon=True
    )
    opener.start()

    def done() -> bool | None:
        assert not _blocked(watcher, writer), "opening the store waited for a writer's transaction"
        return True if not opener.is_alive() else None

    _until(done, "the store opens", child)
    assert opened, "opening the store failed while a writer held its transaction"
    with opened[0] as store:
        _assert_before_the_write(store, request, before)


def _assert_before_the_write(
    store: PgVectorStore, request: SearchRequest, before: list[tuple[str, float | None]]
) -> None:
    assert store.count() == 50 and store.count("i >= 0") == 50
    assert [(d.id, d.text) for d in store.get(["new-0", "keep-0"])] == [("keep-0", "river water 0")]
    assert [(d.id, d.score) for d in store.similarity_search(request)] == before


def _blocked(watcher: Any, pid: int) -> list[int]:
    """The backends waiting for a lock that backend `pid` holds."""
    query = "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
    return [row[0] for row in watcher.execute(query, (pid,)).fetchall()]


def _blocked_by(watcher: Any, holder: int, child: subprocess.Popen[str]) -> int:
    """The writer's backend, once it waits for the holder's row lock."""
    return _until(
        lambda: next(iter(_blocked(watcher, holder)), None), "the writer waits for the term row", child
    )


def _gone(watcher: Any, pid: int) -> bool | None:
    query = "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
    return True if watcher.execute(query, (pid,)).fetchone() is None else None


def _until(check: Callable[[], T | None], what: str, child: subprocess.Popen[str]) -> T:
    """Poll `check` until it returns a value, for at most 30 seconds."""
    deadline = time.monotonic() + 30
    while (found := check()) is None:
        if child.poll() is not None and child.returncode != -signal.SIGKILL:
            raise AssertionError(f"the writer exited ({child.returncode}) before {what}: {_stderr(child)}")
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)
    return found


def _stderr(child: subprocess.Popen[str]) -> str:
    return child.stderr.read() if child.stderr else ""
