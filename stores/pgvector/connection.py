"""Connections to PostgreSQL for the pgvector store: a small pool, errors without secrets.

Each operation borrows a connection from the pool and gives it back, so threads never share one
(a psycopg connection runs one statement at a time). Connections are opened lazily, in autocommit mode,
with the pgvector types registered; every store operation then runs inside its own explicit transaction.
A connection that failed is dropped, not returned.

Passwords never appear in messages or reprs: `mask_url` replaces the password of a URL (or a
`password=` keyword of a libpq connection string) with `***`, and `Database.errors` scrubs the password
from any driver message it wraps.

Example:
    >>> mask_url("postgresql://app:s3cret@db.example:5432/rag")
    'postgresql://app:***@db.example:5432/rag'
    >>> mask_url("host=db password=s3cret dbname=rag")
    'host=db password=*** dbname=rag'
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rag.database_url import mask_url, url_password
from rag.errors import InvalidRequestError, MissingDependencyError, StoreConnectionError, StoreError

__all__ = ["Database", "mask_url", "url_password"]

_MAX_IDLE = 8


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise MissingDependencyError(
            'the Postgres store needs psycopg, which is not installed: pip install "rag-advisors[postgres]"',
            package="psycopg",
            extra="postgres",
        ) from exc
    return psycopg


def _ensure_extension(conn: Any, psycopg: Any) -> None:
    """Create the pgvector extension if it is missing (needs the privilege; a clear error otherwise)."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is not None:
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StoreError(
            "the pgvector extension is not enabled in this database and this user cannot enable it: "
            f"run CREATE EXTENSION vector as its owner or a superuser ({str(exc).strip()})"
        ) from None


class Database:
    """A pool of connections to one database URL (see the module docstring).

    Args:
        url: A libpq URL (`postgresql://user:password@host:5432/db`) or keyword string.
        vector: Whether to register the pgvector types on each connection (needs the extension).
    """

    def __init__(self, url: str, *, vector: bool = True) -> None:
        if not isinstance(url, str) or not url.strip():
            raise InvalidRequestError(f"a database URL must be a non-empty str, got {type(url).__name__}")
        self._url = url
        self._secret = url_password(url)
        self._vector = vector
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def masked_url(self) -> str:
        """The URL with its password masked."""
        return mask_url(self._url)

    def scrub(self, text: str) -> str:
        """`text` without the password."""
        return text.replace(self._secret, "***") if self._secret else text

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Turn driver errors into `StoreError`s naming `action` and the masked URL, never the password."""
        psycopg = _import_psycopg()
        try:
            yield
        except psycopg.OperationalError as exc:
            message = self.scrub(str(exc).strip())
            raise StoreConnectionError(
                f"cannot {action} at {self.masked_url}: {message}", url=self.masked_url
            ) from None
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot {action} at {self.masked_url}: {self.scrub(str(exc).strip())}"
            ) from None

    def _open(self) -> Any:
        psycopg = _import_psycopg()
        conn = psycopg.connect(self._url, autocommit=True)
        try:
            if self._vector:
                from pgvector.psycopg import register_vector

                _ensure_extension(conn, psycopg)
                register_vector(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection for this thread until the block ends; dropped if the block failed."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None or conn.closed:
            conn = self._open()
        try:
            yield conn
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if self._closed or len(self._idle) >= _MAX_IDLE or conn.closed:
                conn.close()
            else:
                self._idle.append(conn)

    @contextmanager
    def transaction(self, *, read_only: bool = False) -> Iterator[Any]:
        """A connection inside one transaction: REPEATABLE READ for reads (one snapshot for every
        statement), READ COMMITTED for writes (which lock before they read)."""
        psycopg = _import_psycopg()
        with self.connection() as conn:
            conn.isolation_level = (
                psycopg.IsolationLevel.REPEATABLE_READ if read_only else psycopg.IsolationLevel.READ_COMMITTED
            )
            conn.read_only = read_only
            with conn.transaction():
                yield conn

    def close(self) -> None:
        """Close the idle connections; connections in use close when given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def reopen(self) -> None:
        """Allow new connections after `close()`."""
        with self._lock:
            self._closed = False
