"""PostgresChatMemoryRepository: the repository contract tests, hostile ids under 16 threads, processes.

The contract tests of `test_memory_repositories.py` run here unchanged, on a real PostgreSQL (each test
gets its own table), through this module's `repo` fixture.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rag.chat import AssistantMessage, UserMessage
from rag.errors import ChatMemoryError, InvalidRequestError
from rag.memory import ChatMemoryRepository, MessageWindowChatMemory, PostgresChatMemoryRepository
from tests.rag.test_memory_repositories import (  # the shared contract, collected here with our `repo`
    test_a_failing_change_leaves_the_conversation_as_it_was,
    test_find_save_update_delete,
    test_ids_only_ever_match_themselves,
    test_messages_round_trip_exactly,
    test_metadata_json_cannot_hold_is_refused,
    test_update_is_atomic_under_threads,
)

__all__ = [
    "test_a_failing_change_leaves_the_conversation_as_it_was",
    "test_find_save_update_delete",
    "test_ids_only_ever_match_themselves",
    "test_messages_round_trip_exactly",
    "test_metadata_json_cannot_hold_is_refused",
    "test_update_is_atomic_under_threads",
]

_ROOT = Path(__file__).resolve().parents[2]
SEP = "\u241f"  # a separator no hostile id holds
HOSTILE = [
    "' OR 1=1 --",
    "x' OR conversation_id != '",
    '" || true',
    "a\\' OR \\'b",
    "back\\slash\\",
    "\\x00",
    "nul\x00inside",
    "%",
    "_",
    "'; DROP TABLE rag_chat_messages; --",
    "會話 🚢 ß",
    "e\u0301",
    "\u00e9",
]


@pytest.fixture
def repo(postgres_server_url: str, fresh_name: Callable[[str], str]) -> Iterator[ChatMemoryRepository]:
    with PostgresChatMemoryRepository(postgres_server_url, table=fresh_name("memory")) as repository:
        yield repository


def test_schema_is_created_on_first_use(postgres_server_url: str, fresh_name: Callable[[str], str]) -> None:
    import psycopg

    schema, table = fresh_name("chat"), fresh_name("messages")
    repo = PostgresChatMemoryRepository(postgres_server_url, table=table, schema=schema)
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        exists = "SELECT to_regclass(%s) IS NOT NULL"
        assert conn.execute(exists, (f"{schema}.{table}",)).fetchone() == (False,)  # nothing before use
        assert repo.conversation_ids() == []
        assert conn.execute(exists, (f"{schema}.{table}",)).fetchone() == (True,)
    repo.close()


def test_sixteen_threads_two_repositories_hostile_ids_never_cross(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    table = fresh_name("hostile")
    repos = [PostgresChatMemoryRepository(postgres_server_url, table=table) for _ in range(2)]
    memories = [MessageWindowChatMemory(repo, max_messages=1000) for repo in repos]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        rng = random.Random(n)
        try:
            for turn in range(12):
                cid = rng.choice(HOSTILE)
                memory = memories[(n + turn) % 2]
                memory.add(
                    cid,
                    [
                        UserMessage(f"{cid}{SEP}{n}{SEP}{turn}"),
                        AssistantMessage(f"{cid}{SEP}{n}{SEP}{turn}{SEP}r"),
                    ],
                )
                for message in memory.get(cid):
                    assert (message.text or "").split(SEP)[0] == cid
        except BaseException as exc:  # reported after join
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    total = 0
    for cid in repos[0].conversation_ids():
        texts = [m.text or "" for m in repos[1].find(cid)]
        assert {text.split(SEP)[0] for text in texts} == {cid}
        for n in range(16):  # each thread's turns in its own order, user before assistant
            mine = [t for t in texts if t.split(SEP)[1] == str(n)]
            turns = [t.split(SEP)[2] for t in mine[::2]]
            assert mine == [f"{cid}{SEP}{n}{SEP}{t}{suffix}" for t in turns for suffix in ("", SEP + "r")]
        total += len(texts)
    assert total == 16 * 12 * 2 == repos[0].count_messages()
    assert set(repos[0].conversation_ids()) <= set(HOSTILE)
    for repo in repos:
        repo.close()


def test_errors_and_repr_never_show_the_password(postgres_server_url: str) -> None:
    url = "postgresql://someone:Sup3rSecret@127.0.0.1:1/nowhere?connect_timeout=2"
    repo = PostgresChatMemoryRepository(url)
    assert "Sup3rSecret" not in repr(repo) and "***" in repr(repo)
    with pytest.raises(ChatMemoryError) as info:
        repo.find("c")
    assert "Sup3rSecret" not in str(info.value) and "someone:***@127.0.0.1:1" in str(info.value)


@pytest.mark.parametrize("bad", ["", "   "])
def test_a_url_is_required(bad: str) -> None:
    with pytest.raises(InvalidRequestError, match="database URL"):
        PostgresChatMemoryRepository(bad)


def test_bad_table_name_is_refused(postgres_server_url: str) -> None:
    with pytest.raises(InvalidRequestError, match="table name"):
        PostgresChatMemoryRepository(postgres_server_url, table="x; DROP TABLE y")


_WRITER = """
    import sys
    from rag.chat import AssistantMessage, UserMessage
    from rag.memory import MessageWindowChatMemory, PostgresChatMemoryRepository
    url, table, name, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    memory = MessageWindowChatMemory(PostgresChatMemoryRepository(url, table=table), max_messages=1_000_000)
    for i in range(turns):
        memory.add("shared", [UserMessage(f"{name} q{i}"), AssistantMessage(f"{name} a{i}")])
"""


def test_processes_share_one_conversation_without_losing_a_message(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    table = fresh_name("procs")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_WRITER), postgres_server_url, table, name, "30"],
            cwd=_ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2", "p3")
    ]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], errors
    with PostgresChatMemoryRepository(postgres_server_url, table=table) as repo:
        shared = [m.text or "" for m in repo.find("shared")]
    assert len(shared) == 180
    for name in ("p1", "p2", "p3"):
        assert [t for t in shared if t.startswith(name)] == [
            t for i in range(30) for t in (f"{name} q{i}", f"{name} a{i}")
        ]
