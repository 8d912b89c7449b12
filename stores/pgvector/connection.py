"""A small pool of PostgreSQL connections: each operation borrows one (a psycopg connection runs one
statement at a time) and gives it back, or drops it if the operation failed. Connections open lazily,
in autocommit mode with the pgvector types registered; each operation runs in an explicit transaction.
Messages and reprs carry the URL with its password masked, never the password.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rag.database_url import mask_url, url_password
from rag.errors import InvalidRequestError, MissingDependencyError, StoreConnectionError, StoreError

__all__ = ["Database"]

_MAX_IDLE = 8


class Database:
    """A pool of connections to one database (a libpq URL or keyword string).

    Example:
        >>> Database("postgresql://app:s3cret@db.example:5432/rag").masked_url
        'postgresql://app:***@db.example:5432/rag'
    """

    def __init__(self, url: str) -> None:
        if not isinstance(url, str) or not url.strip():
            raise InvalidRequestError(f"a database URL must be a non-empty str, got {type(url).__name__}")
        self._url = url
        self._secret = url_password(url)
        self.masked_url = mask_url(url)
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def _open(self, psycopg: Any) -> Any:
        conn = psycopg.connect(self._url, autocommit=True)
        try:
            from pgvector.psycopg import register_vector

            if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise StoreError(
                        "the pgvector extension is not enabled in this database and this user cannot enable "
                        f"it: run CREATE EXTENSION vector as its owner or a superuser ({str(exc).strip()})"
                    ) from None
            register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def transaction(self, action: str, *, read_only: bool = False) -> Iterator[Any]:
        """A connection inside one transaction: REPEATABLE READ for reads (one snapshot for every
        statement), READ COMMITTED for writes (which lock before they read). Driver errors become
        `StoreError`s naming `action` and the masked URL."""
        try:
            import psycopg
        except ImportError as exc:
            raise MissingDependencyError(
                "the Postgres store needs psycopg, which is not installed: "
                'pip install "rag-advisors[postgres]"',
                package="psycopg",
                extra="postgres",
            ) from exc
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None or conn.closed:
                conn = self._open(psycopg)
            try:
                level = psycopg.IsolationLevel
                conn.isolation_level = level.REPEATABLE_READ if read_only else level.READ_COMMITTED
                conn.read_only = read_only
                with conn.transaction():
                    yield conn
            except BaseException:
                conn.close()
                raise
        except psycopg.Error as exc:
            message = str(exc).strip()
            message = message.replace(self._secret, "***") if self._secret else message
            text = f"cannot {action} at {self.masked_url}: {message}"
            if isinstance(exc, psycopg.OperationalError):
                raise StoreConnectionError(text, url=self.masked_url) from None
            raise StoreError(text) from None
        with self._lock:
            if len(self._idle) < _MAX_IDLE and not conn.closed:
                self._idle.append(conn)
            else:
                conn.close()

    def close(self) -> None:
        """Close the idle connections (the pool opens new ones if used again)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
