"""`SQLiteChatMemoryRepository`: conversations in one SQLite file, the embedded default.

The file is opened in WAL mode, so readers never wait for writers. Each thread gets its own connection;
writes from one process queue on a lock, and writes from other processes wait on SQLite's busy timeout.
Every change is one `BEGIN IMMEDIATE` transaction, so a crash at any point leaves each conversation as it
was before or after the change, never in between. Rows are keyed by (conversation id, position) in a
clustered `WITHOUT ROWID` table: reading a conversation is one range scan whatever the file holds.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Literal

from rag.chat.messages import Message
from rag.errors import ChatMemoryError, InvalidRequestError
from rag.memory.base import as_message_list, check_conversation_id
from rag.memory.serialization import message_from_json, message_to_json

__all__ = ["SQLiteChatMemoryRepository"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_messages (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (conversation_id, position)
) WITHOUT ROWID
"""
_SCHEMA_VERSION = 1


class _Row:
    __slots__ = ("json", "position")

    def __init__(self, position: int, json: str) -> None:
        self.position = position
        self.json = json


def _plan(old: list[_Row], new: list[str]) -> tuple[list[int], list[str]]:
    """Which old rows to delete and which new texts to append, so the rows read back as `new`.

    New messages are matched in order against old rows; the usual change (drop the oldest few, append a
    turn) then touches only those rows instead of rewriting the conversation.
    """
    kept: set[int] = set()
    j = 0
    matched = 0
    for text in new:
        k = next((k for k in range(j, len(old)) if old[k].json == text), None)
        if k is None:
            break
        kept.add(old[k].position)
        j = k + 1
        matched += 1
    deletes = [row.position for row in old if row.position not in kept]
    return deletes, new[matched:]


class SQLiteChatMemoryRepository:
    """Chat messages in a SQLite file: durable, shared by threads and by processes.

    The schema is created on first use (parent folders too). Messages round-trip exactly, tool calls and
    metadata included (stored as JSON). `synchronous="NORMAL"` (the default) survives a killed process;
    `"FULL"` also survives a power cut, at some cost per write. Call `close()` (or use `with`) when done.

    Example:
        >>> import tempfile, os
        >>> from rag.chat import UserMessage
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.sqlite")
        >>> with SQLiteChatMemoryRepository(path) as repo:
        ...     repo.save_all("c1", [UserMessage("Hi")])
        >>> [m.text for m in SQLiteChatMemoryRepository(path).find("c1")]
        ['Hi']
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 30.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        text = os.fspath(path)
        if not text or text == ":memory:" or text.startswith("file:"):
            raise InvalidRequestError(
                f"SQLiteChatMemoryRepository needs a file path, got {text!r}; "
                "use InMemoryChatMemoryRepository for memory that lives in the process"
            )
        if synchronous not in ("NORMAL", "FULL"):
            raise InvalidRequestError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if busy_timeout < 0:
            raise InvalidRequestError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")
        self._path = Path(text)
        self._busy_timeout = float(busy_timeout)
        self._synchronous = synchronous
        self._local = threading.local()
        self._generation = 0  # bumped by close(): threads then open fresh connections
        self._connections: list[sqlite3.Connection] = []
        self._registry_lock = threading.Lock()
        # One writer per process at a time: threads queue here instead of spinning in SQLite's busy handler.
        self._write_lock = threading.Lock()

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    # -- connections -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self._busy_timeout
        while True:
            # isolation_level=None: no implicit transactions; every write opens BEGIN IMMEDIATE itself.
            conn = sqlite3.connect(
                self._path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._set_up(conn)
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                # Processes opening a new file at once race to switch it to WAL; SQLite reports that race
                # as "database is locked" at once, without waiting in the busy handler, so wait here.
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)
            except BaseException:
                conn.close()
                raise

    def _set_up(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < _SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        elif version > _SCHEMA_VERSION:
            raise ChatMemoryError(
                f"chat memory file {str(self._path)!r} has schema version {version}, newer than this "
                f"toolkit's {_SCHEMA_VERSION}; upgrade rag-advisors"
            )

    def _connection(self) -> sqlite3.Connection:
        held = getattr(self._local, "held", None)
        if held is not None and held[0] == self._generation:
            conn: sqlite3.Connection = held[1]
            return conn
        try:
            conn = self._connect()
        except sqlite3.Error as exc:
            raise ChatMemoryError(f"cannot open chat memory file {str(self._path)!r}: {exc}") from exc
        with self._registry_lock:
            self._connections.append(conn)
            self._local.held = (self._generation, conn)
        return conn

    @contextmanager
    def _reading(self, conversation_id: str | None) -> Iterator[sqlite3.Connection]:
        try:
            yield self._connection()
        except sqlite3.Error as exc:
            raise ChatMemoryError(
                f"reading chat memory {str(self._path)!r} failed: {exc}", conversation_id=conversation_id
            ) from exc

    @contextmanager
    def _writing(self, conversation_id: str) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back if anything inside fails (a bad message, a full disk...)."""
        with self._write_lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise ChatMemoryError(
                    f"writing chat memory {str(self._path)!r} failed: {exc}", conversation_id=conversation_id
                ) from exc

    # -- the repository ----------------------------------------------------------------------------

    def find(self, conversation_id: str) -> list[Message]:
        check_conversation_id(conversation_id)
        with self._reading(conversation_id) as conn:
            rows = conn.execute(
                "SELECT message FROM chat_messages WHERE conversation_id = ? ORDER BY position",
                (conversation_id,),
            ).fetchall()
        return [message_from_json(row[0]) for row in rows]

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        items = as_message_list(messages)
        self.update(conversation_id, lambda _old: items)

    def update(self, conversation_id: str, change: Callable[[list[Message]], list[Message]]) -> None:
        check_conversation_id(conversation_id)
        with self._writing(conversation_id) as conn:
            rows = conn.execute(
                "SELECT position, message FROM chat_messages WHERE conversation_id = ? ORDER BY position",
                (conversation_id,),
            ).fetchall()
            old = [_Row(position, text) for position, text in rows]
            new_messages = as_message_list(change([message_from_json(row.json) for row in old]))
            new = [message_to_json(message) for message in new_messages]
            deletes, appends = _plan(old, new)
            conn.executemany(
                "DELETE FROM chat_messages WHERE conversation_id = ? AND position = ?",
                [(conversation_id, position) for position in deletes],
            )
            start = old[-1].position + 1 if old else 0
            roles = [message.role.value for message in new_messages[len(new) - len(appends) :]]
            conn.executemany(
                "INSERT INTO chat_messages (conversation_id, position, role, message) VALUES (?, ?, ?, ?)",
                [(conversation_id, start + i, roles[i], text) for i, text in enumerate(appends)],
            )

    def delete(self, conversation_id: str) -> None:
        check_conversation_id(conversation_id)
        with self._writing(conversation_id) as conn:
            conn.execute("DELETE FROM chat_messages WHERE conversation_id = ?", (conversation_id,))

    def conversation_ids(self) -> list[str]:
        with self._reading(None) as conn:
            rows = conn.execute("SELECT DISTINCT conversation_id FROM chat_messages ORDER BY conversation_id")
            return [row[0] for row in rows.fetchall()]

    def count_messages(self) -> int:
        """How many messages the file holds, over all conversations."""
        with self._reading(None) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM chat_messages").fetchone()[0])

    # -- lifetime ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every connection this repository opened; it reopens on next use."""
        with self._registry_lock:
            self._generation += 1
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    def __enter__(self) -> SQLiteChatMemoryRepository:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteChatMemoryRepository({str(self._path)!r})"
