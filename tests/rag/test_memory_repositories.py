"""Chat memory repositories: exact round trips, atomic updates, threads, processes and crashes."""

from __future__ import annotations

import functools
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chat import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from rag.errors import ChatMemoryError, InvalidRequestError
from rag.memory import (
    ChatMemoryRepository,
    InMemoryChatMemoryRepository,
    SQLiteChatMemoryRepository,
    message_from_json,
    message_to_json,
)

_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["in_memory", "sqlite"])
def repo(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChatMemoryRepository]:
    if request.param == "in_memory":
        yield InMemoryChatMemoryRepository()
        return
    sqlite_repo = SQLiteChatMemoryRepository(tmp_path_factory.mktemp("repo") / "sub" / "memory.sqlite")
    yield sqlite_repo
    sqlite_repo.close()


# -- exact round trips ---------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_metadata = st.dictionaries(_text, _json, max_size=3)
_calls = st.lists(st.builds(ToolCall, _text, _text, _text), max_size=3).map(tuple)
_messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemMessage, _text, _metadata),
    st.builds(UserMessage, _text, _metadata),
    st.builds(AssistantMessage, st.none() | _text, _calls, _metadata),
    st.builds(ToolMessage, _text, _text, _text, _metadata),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(messages=st.lists(_messages, max_size=6))
def test_messages_round_trip_exactly(repo: ChatMemoryRepository, messages: list[Message]) -> None:
    repo.save_all("round-trip", messages)
    assert repo.find("round-trip") == messages
    for message in messages:
        assert message_from_json(message_to_json(message)) == message


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [({"when": (1, 2)}, "tuple"), ({"x": float("nan")}, "non-finite"), ({"d": {1: "a"}}, "non-str key")],
)
def test_metadata_json_cannot_hold_is_refused(
    repo: ChatMemoryRepository, metadata: dict[str, Any], problem: str
) -> None:
    repo.save_all("c", [UserMessage("kept")])
    if isinstance(repo, SQLiteChatMemoryRepository):
        with pytest.raises(ChatMemoryError, match=problem):
            repo.save_all("c", [UserMessage("hi", metadata)])
        assert [m.text for m in repo.find("c")] == ["kept"]  # the failed write was rolled back
    with pytest.raises(ChatMemoryError, match=problem):
        message_to_json(UserMessage("hi", metadata))


def test_malformed_stored_json_is_a_clear_error() -> None:
    with pytest.raises(ChatMemoryError, match="unknown role 'robot'"):
        message_from_json('{"role": "robot", "text": "x"}')
    with pytest.raises(ChatMemoryError, match="not JSON"):
        message_from_json("{oops")


# -- the repository contract ---------------------------------------------------------------------


def test_find_save_update_delete(repo: ChatMemoryRepository) -> None:
    assert repo.find("none") == [] and repo.conversation_ids() == []
    repo.save_all("b", [UserMessage("1"), AssistantMessage("2")])
    repo.update("b", lambda old: [*old[1:], UserMessage("3")])
    repo.update("a", lambda old: [*old, UserMessage("first")])
    assert [m.text for m in repo.find("b")] == ["2", "3"]
    assert repo.conversation_ids() == ["a", "b"]
    repo.save_all("a", [])
    repo.delete("b")
    repo.delete("never-existed")
    assert repo.conversation_ids() == [] and repo.find("b") == []


def test_a_failing_change_leaves_the_conversation_as_it_was(repo: ChatMemoryRepository) -> None:
    repo.save_all("c", [UserMessage("kept")])

    def boom(_old: list[Message]) -> list[Message]:
        raise RuntimeError("change failed")

    with pytest.raises(RuntimeError, match="change failed"):
        repo.update("c", boom)
    assert [m.text for m in repo.find("c")] == ["kept"]


def test_ids_only_ever_match_themselves(repo: ChatMemoryRepository) -> None:
    hostile = ["x' OR conversation_id != '", '" || true', "%", "_", "a\x00b", "ß", "SS", "x" * 1024]
    for i, cid in enumerate(hostile):
        repo.save_all(cid, [UserMessage(str(i))])
    for i, cid in enumerate(hostile):
        assert [m.text for m in repo.find(cid)] == [str(i)]
    assert repo.conversation_ids() == sorted(hostile)


def _append(message: Message, old: list[Message]) -> list[Message]:
    return [*old, message]


def test_update_is_atomic_under_threads(repo: ChatMemoryRepository) -> None:
    def worker(n: int) -> None:
        for i in range(25):
            repo.update("shared", functools.partial(_append, UserMessage(f"{n}:{i}")))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = [m.text or "" for m in repo.find("shared")]
    assert len(seen) == 200 and len(set(seen)) == 200
    for n in range(8):  # each thread's messages in its own order
        assert [s for s in seen if s.startswith(f"{n}:")] == [f"{n}:{i}" for i in range(25)]


# -- SQLite specifics ------------------------------------------------------------------------------


def test_sqlite_file_is_wal_and_schema_is_created_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "memory.sqlite"
    repo = SQLiteChatMemoryRepository(path)
    assert not path.exists()  # nothing happens before first use
    assert repo.conversation_ids() == []
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall() == [
            ("chat_messages",)
        ]
    repo.close()


@pytest.mark.parametrize("bad", [":memory:", "", "file:x?mode=memory"])
def test_sqlite_needs_a_file_path(bad: str) -> None:
    with pytest.raises(InvalidRequestError, match="needs a file path"):
        SQLiteChatMemoryRepository(bad)


def test_sqlite_unreadable_file_is_a_chat_memory_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ChatMemoryError, match=r"junk\.sqlite"):
        SQLiteChatMemoryRepository(path).find("c")


def test_sqlite_close_then_reuse(tmp_path: Path) -> None:
    with SQLiteChatMemoryRepository(tmp_path / "m.sqlite") as repo:
        repo.save_all("c", [UserMessage("a")])
    assert [m.text for m in repo.find("c")] == ["a"]  # reopens after close
    assert repo.count_messages() == 1
    repo.close()


def _run(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_WRITER = """
    import sys
    from rag.chat import AssistantMessage, UserMessage
    from rag.memory import MessageWindowChatMemory, SQLiteChatMemoryRepository
    path, name, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
    memory = MessageWindowChatMemory(SQLiteChatMemoryRepository(path), max_messages=1_000_000)
    for i in range(turns):
        memory.add("shared", [UserMessage(f"{name} q{i}"), AssistantMessage(f"{name} a{i}")])
        memory.add(name, UserMessage(f"q{i}"))
        print(i, flush=True)
"""


def test_two_processes_share_one_file_without_losing_a_message(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    procs = [_run(_WRITER, path, name, "60") for name in ("p1", "p2")]
    errors = [proc.communicate(timeout=60)[1] for proc in procs]  # reap both before asserting
    assert [proc.returncode for proc in procs] == [0, 0], errors
    repo = SQLiteChatMemoryRepository(path)
    shared = [m.text for m in repo.find("shared")]
    assert len(shared) == 240
    for name in ("p1", "p2"):
        mine = [t for t in shared if t is not None and t.startswith(name)]
        assert mine == [t for i in range(60) for t in (f"{name} q{i}", f"{name} a{i}")]
        assert [m.text for m in repo.find(name)] == [f"q{i}" for i in range(60)]
    repo.close()


def test_a_killed_process_leaves_every_completed_turn_readable(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.sqlite")
    proc = _run(_WRITER, path, "solo", "1000000")
    assert proc.stdout is not None
    completed = -1
    while completed < 150:  # let it get well into the conversation, then kill it mid-write
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        completed = int(line)
    proc.send_signal(signal.SIGKILL)
    rest, _err = proc.communicate(timeout=30)
    completed = max([completed, *(int(x) for x in rest.split())])
    assert proc.returncode == -signal.SIGKILL
    # The next process reads what the killed one completed.
    reader = _run(
        """
        import json, sys
        from rag.memory import SQLiteChatMemoryRepository
        repo = SQLiteChatMemoryRepository(sys.argv[1])
        print(json.dumps([[m.text for m in repo.find(c)] for c in ("shared", "solo")]))
        """,
        path,
    )
    out, err = reader.communicate(timeout=30)
    assert reader.returncode == 0, err
    shared, solo = json.loads(out)
    turns = len(shared) // 2
    assert len(shared) % 2 == 0  # each turn was one transaction: never half of one
    assert turns >= completed + 1
    assert shared == [t for i in range(turns) for t in (f"solo q{i}", f"solo a{i}")]
    assert solo[: completed + 1] == [f"q{i}" for i in range(completed + 1)]


def test_many_processes_can_create_one_new_file_at_once(tmp_path: Path) -> None:
    # They race to switch the new file to WAL; SQLite reports that race as "database is locked".
    path = str(tmp_path / "fresh.sqlite")
    names = [f"w{i}" for i in range(6)]
    procs = [_run(_WRITER, path, name, "2") for name in names]
    errors = [proc.communicate(timeout=60)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(names), errors
    repo = SQLiteChatMemoryRepository(path)
    assert len(repo.find("shared")) == 4 * len(names)
    repo.close()
