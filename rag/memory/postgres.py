"""`PostgresChatMemoryRepository`: conversations in a PostgreSQL table, shared by processes and machines.

The table (`rag_chat_messages` unless named otherwise) is created on first use, under an advisory lock
so processes starting at once do not race (Spring AI's `initialize-schema`). Rows are keyed by
(conversation id, position); the id is stored as its UTF-8 bytes (`bytea`), so any string is an id
(quotes, backslashes and NUL included), ids sort by code point, and an id is only ever a bound
parameter. Every change is one transaction holding a transaction-level advisory lock on the
conversation, so `update` is atomic across threads, processes and machines; a killed writer's
transaction is rolled back by the server. psycopg is imported on first use.

Example:
    >>> from rag.chat import UserMessage
    >>> repo = PostgresChatMemoryRepository("postgresql://app@localhost/rag")  # doctest: +SKIP
    >>> repo.save_all("c1", [UserMessage("Hi")])  # doctest: +SKIP
    >>> [m.text for m in repo.find("c1")]  # doctest: +SKIP
    ['Hi']
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from rag.chat.messages import Message
from rag.database_url import mask_url, scrub
from rag.errors import ChatMemoryError, InvalidRequestError
from rag.memory.base import as_message_list, check_conversation_id
from rag.memory.serialization import message_from_json, message_to_json

__all__ = ["PostgresChatMemoryRepository"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_MAX_IDLE = 8


def _lock_key(*parts: bytes) -> int:
    """A signed 64-bit advisory-lock key; a collision only makes two conversations wait for each other."""
    digest = hashlib.blake2b(b"\x00".join(parts), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _plan(old: list[tuple[int, str]], new: list[str]) -> tuple[list[int], list[str]]:
    """Positions to delete and texts to append so the rows read back as `new` (the usual change, drop
    the oldest few and append a turn, then touches only those rows)."""
    kept: set[int] = set()
    j = matched = 0
    for text in new:
        k = next((k for k in range(j, len(old)) if old[k][1] == text), None)
        if k is None:
            break
        kept.add(old[k][0])
        j, matched = k + 1, matched + 1
    return [position for position, _ in old if position not in kept], new[matched:]


class PostgresChatMemoryRepository:
    """Chat messages in PostgreSQL: durable, shared by threads, processes and machines.

    Example:
        >>> from rag.chat import UserMessage
        >>> with PostgresChatMemoryRepository("postgresql://app@db/rag") as repo:  # doctest: +SKIP
        ...     repo.update("c1", lambda old: [*old, UserMessage("Hi")])

    Args:
        url: A libpq URL or keyword string. Its password never appears in errors or the repr.
        table: The messages table (letters, digits, `_`).
        schema: The schema holding it (created if missing).
    """

    def __init__(self, url: str, *, table: str = "rag_chat_messages", schema: str = "public") -> None:
        if not isinstance(url, str) or not url.strip():
            raise InvalidRequestError("PostgresChatMemoryRepository needs a database URL")
        for kind, name in (("table", table), ("schema", schema)):
            if not isinstance(name, str) or not _NAME.match(name):
                raise InvalidRequestError(f"{kind} name must be letters, digits or '_', got {name!r}")
        self._url = url
        self._table = table
        self._schema = schema
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._ready = False

    @property
    def url(self) -> str:
        """The database URL with its password masked."""
        return mask_url(self._url)

    # -- connections -----------------------------------------------------------------------------

    def _name(self) -> Any:
        from psycopg import sql

        return sql.Identifier(self._schema, self._table)

    def _open(self) -> Any:
        import psycopg

        conn = psycopg.connect(self._url, autocommit=True)
        if not self._ready:
            self._create(conn)
        return conn

    def _create(self, conn: Any) -> None:
        from psycopg import sql

        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(b"schema", self._table.encode()),))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema)))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (conversation_id bytea NOT NULL, "
                    "position integer NOT NULL, "
                    "role text NOT NULL, message text NOT NULL, PRIMARY KEY (conversation_id, position))"
                ).format(self._name())
            )
        self._ready = True

    @contextmanager
    def _transaction(self, action: str, conversation_id: str | None) -> Iterator[Any]:
        import psycopg

        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None or conn.closed:
                conn = self._open()
            try:
                with conn.transaction():
                    yield conn
            except BaseException:
                conn.close()
                raise
            with self._lock:
                if len(self._idle) < _MAX_IDLE:
                    self._idle.append(conn)
                    conn = None
            if conn is not None:
                conn.close()
        except psycopg.Error as exc:
            message = scrub(str(exc).strip(), self._url)
            raise ChatMemoryError(
                f"{action} chat memory at {self.url} failed: {message}", conversation_id=conversation_id
            ) from None

    # -- the repository ----------------------------------------------------------------------------

    def find(self, conversation_id: str) -> list[Message]:
        from psycopg import sql

        key = check_conversation_id(conversation_id).encode()
        with self._transaction("reading", conversation_id) as conn:
            rows = conn.execute(
                sql.SQL("SELECT message FROM {} WHERE conversation_id = %s ORDER BY position").format(
                    self._name()
                ),
                (key,),
            ).fetchall()
        return [message_from_json(row[0]) for row in rows]

    def save_all(self, conversation_id: str, messages: Sequence[Message]) -> None:
        items = as_message_list(messages)
        self.update(conversation_id, lambda _old: items)

    def update(self, conversation_id: str, change: Callable[[list[Message]], list[Message]]) -> None:
        from psycopg import sql

        key = check_conversation_id(conversation_id).encode()
        name = self._name()
        with self._transaction("writing", conversation_id) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self._table.encode(), key),))
            old = conn.execute(
                sql.SQL(
                    "SELECT position, message FROM {} WHERE conversation_id = %s ORDER BY position"
                ).format(name),
                (key,),
            ).fetchall()
            new_messages = as_message_list(change([message_from_json(text) for _, text in old]))
            new = [message_to_json(message) for message in new_messages]
            deletes, appends = _plan(old, new)
            if deletes:
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE conversation_id = %s AND position = ANY(%s)").format(name),
                    (key, deletes),
                )
            start = old[-1][0] + 1 if old else 0
            roles = [message.role.value for message in new_messages[len(new) - len(appends) :]]
            if appends:
                with conn.cursor() as cursor:
                    cursor.executemany(
                        sql.SQL(
                            "INSERT INTO {} (conversation_id, position, role, message) "
                            "VALUES (%s, %s, %s, %s)"
                        ).format(name),
                        [(key, start + i, roles[i], text) for i, text in enumerate(appends)],
                    )

    def delete(self, conversation_id: str) -> None:
        from psycopg import sql

        key = check_conversation_id(conversation_id).encode()
        with self._transaction("writing", conversation_id) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self._table.encode(), key),))
            conn.execute(sql.SQL("DELETE FROM {} WHERE conversation_id = %s").format(self._name()), (key,))

    def conversation_ids(self) -> list[str]:
        from psycopg import sql

        with self._transaction("reading", None) as conn:
            rows = conn.execute(
                sql.SQL("SELECT DISTINCT conversation_id FROM {} ORDER BY conversation_id").format(
                    self._name()
                )
            ).fetchall()
        return [bytes(row[0]).decode() for row in rows]

    def count_messages(self) -> int:
        """How many messages the table holds, over all conversations."""
        from psycopg import sql

        with self._transaction("reading", None) as conn:
            return int(conn.execute(sql.SQL("SELECT count(*) FROM {}").format(self._name())).fetchone()[0])

    # -- lifetime ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the idle connections; the repository reconnects on next use."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> PostgresChatMemoryRepository:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresChatMemoryRepository({self.url!r}, table={self._schema}.{self._table})"
