"""`PostgresManifest`: the ingestion manifest in the store's PostgreSQL database.

With `--store pgvector` the manifest lives beside the vectors (table `<table>_manifest`,
`<table>_manifest_roots` for the recorded roots and `<table>_manifest_meta` for free-form values), so
machines ingesting into one database agree on what is stored. Roots are recorded by absolute path, as
in SQLite: machines that share a database should ingest from the same paths. It mirrors
`ingest.manifest.Manifest` method for method (and is one, for the pipeline's
`isinstance` check); its changes are one transaction, durable at `commit()`, dropped by `close()`.

Example:
    >>> m = PostgresManifest("postgresql://app@db/rag", table="docs")  # doctest: +SKIP
    >>> m.mark_pending("a.md", "/docs", ["id1"]); m.commit()  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ingest.manifest import Manifest, ManifestEntry, ManifestState, new_root_label
from rag.database_url import mask_url, scrub
from rag.errors import InvalidRequestError, MissingDependencyError, StoreError

__all__ = ["PostgresManifest"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_COLUMNS = "source, root, size, mtime_ns, sha256, settings, chunk_ids, digests"


def _entry(row: tuple[Any, ...]) -> ManifestEntry:
    source, root, size, mtime_ns, sha256, settings, ids, digests = row
    return ManifestEntry(source, root, int(size), int(mtime_ns), sha256, settings, tuple(ids), tuple(digests))


class PostgresManifest(Manifest):
    """Per-file records of an ingested collection, in PostgreSQL. Nothing is durable until `commit()`.

    Args:
        url: The database (the password is never shown).
        table: The store's table; the manifest is `<table>_manifest`.
        schema: The schema holding it.
    """

    def __init__(self, url: str, *, table: str, schema: str = "public") -> None:
        for kind, name in (("table", table), ("schema", schema)):
            if not isinstance(name, str) or not _NAME.match(name):
                raise InvalidRequestError(f"{kind} name must be letters, digits or '_', got {name!r}")
        self._url = url
        self.path = f"{mask_url(url)} table {schema}.{table}_manifest"
        try:
            from psycopg import sql
        except ImportError as exc:
            raise MissingDependencyError(
                "the Postgres manifest needs psycopg, which is not installed: "
                'pip install "rag-advisors[postgres]"',
                package="psycopg",
                extra="postgres",
            ) from exc

        self._files = sql.Identifier(schema, f"{table}_manifest")
        self._meta = sql.Identifier(schema, f"{table}_manifest_meta")
        self._roots = sql.Identifier(schema, f"{table}_manifest_roots")
        with self._errors("open"):
            import psycopg

            self._conn = psycopg.connect(url)
            self._create(sql.Identifier(schema))

    def _errors(self, action: str) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def wrapped() -> Any:
            import psycopg

            try:
                yield
            except psycopg.Error as exc:
                raise StoreError(
                    f"cannot {action} the ingestion manifest {self.path!r}: "
                    f"{scrub(str(exc).strip(), self._url)}"
                ) from None

        return wrapped()

    def _create(self, schema: Any) -> None:
        from psycopg import sql

        conn = self._conn
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.path,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        conn.execute(
            sql.SQL(
                'CREATE TABLE IF NOT EXISTS {} (source text COLLATE "C" PRIMARY KEY, root text NOT NULL, '
                "size bigint NOT NULL, mtime_ns bigint NOT NULL, sha256 text NOT NULL, "
                "settings text NOT NULL, "
                "chunk_ids jsonb NOT NULL, digests jsonb NOT NULL, pending jsonb)"
            ).format(self._files)
        )
        conn.execute(
            sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value text NOT NULL)").format(
                self._meta
            )
        )
        conn.execute(
            sql.SQL(
                'CREATE TABLE IF NOT EXISTS {} (label text COLLATE "C" PRIMARY KEY, '
                "path text NOT NULL UNIQUE)"
            ).format(self._roots)
        )
        conn.commit()

    def roots(self) -> dict[str, str]:
        """Every recorded root: label -> absolute folder path."""
        from psycopg import sql

        rows = self._run(sql.SQL("SELECT label, path FROM {} ORDER BY label").format(self._roots))
        return {str(label): str(path) for label, path in rows.fetchall()}

    def add_root(self, path: str) -> str:
        """Record `path` as a root and return its label, as `Manifest.add_root` does.

        The roots table is locked for the rest of this transaction, so two machines recording roots at
        once cannot give two folders one label.
        """
        from psycopg import sql

        self._run(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(self._roots))
        known = self.roots()
        for label, recorded in known.items():
            if recorded == path:
                return label
        label = new_root_label(path, known)
        self._run(sql.SQL("INSERT INTO {} (label, path) VALUES (%s, %s)").format(self._roots), (label, path))
        return label

    def find(self, relative: str, root: str | None = None) -> list[ManifestEntry]:
        """The records whose relative path is `relative` (under the root labelled `root`, when given)."""
        from psycopg import sql

        if root is not None:
            entry = self.get(f"{root}/{relative}")
            return [] if entry is None else [entry]
        statement = sql.SQL(
            f"SELECT {_COLUMNS} FROM {{}} WHERE source = root || '/' || %s ORDER BY source"
        ).format(self._files)
        return [_entry(row) for row in self._run(statement, (relative,)).fetchall()]

    def _run(self, statement: Any, params: Any = None) -> Any:
        with self._errors("use"):
            return self._conn.execute(statement, params)

    def close(self) -> None:
        """Close the connection; uncommitted changes are dropped."""
        self._conn.close()

    def commit(self) -> None:
        """Make every change so far durable, atomically."""
        with self._errors("commit"):
            self._conn.commit()

    def entries(self) -> dict[str, ManifestEntry]:
        from psycopg import sql

        rows = self._run(sql.SQL(f"SELECT {_COLUMNS} FROM {{}} ORDER BY source").format(self._files))
        return {row[0]: _entry(row) for row in rows.fetchall()}

    def states(self) -> dict[str, ManifestState]:
        from psycopg import sql

        statement = sql.SQL(
            "SELECT source, root, size, mtime_ns, sha256, settings, jsonb_array_length(chunk_ids) FROM {}"
        ).format(self._files)
        return {
            row[0]: ManifestState(row[0], row[1], int(row[2]), int(row[3]), row[4], row[5], int(row[6]))
            for row in self._run(statement).fetchall()
        }

    def get(self, source: str) -> ManifestEntry | None:
        from psycopg import sql

        statement = sql.SQL(f"SELECT {_COLUMNS} FROM {{}} WHERE source = %s").format(self._files)
        row = self._run(statement, (source,)).fetchone()
        return None if row is None else _entry(row)

    def put_many(self, entries: Iterable[ManifestEntry]) -> None:
        from psycopg import sql

        rows = [
            (
                e.source,
                e.root,
                e.size,
                e.mtime_ns,
                e.sha256,
                e.settings,
                json.dumps(list(e.chunk_ids)),
                json.dumps(list(e.digests)),
            )
            for e in entries
        ]
        statement = sql.SQL(
            f"INSERT INTO {{}} ({_COLUMNS}, pending) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, NULL) "
            "ON CONFLICT (source) DO UPDATE SET root = excluded.root, size = excluded.size, "
            "mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256, settings = excluded.settings, "
            "chunk_ids = excluded.chunk_ids, digests = excluded.digests, pending = NULL"
        ).format(self._files)
        with self._errors("write"), self._conn.cursor() as cursor:
            cursor.executemany(statement, rows)

    def mark_pending_many(self, files: Iterable[tuple[str, str, Iterable[str]]]) -> None:
        from psycopg import sql

        rows = [(source, root, json.dumps(list(chunk_ids))) for source, root, chunk_ids in files]
        # A new file gets a placeholder row that never matches a real file (size -1), as in SQLite.
        statement = sql.SQL(
            f"INSERT INTO {{}} ({_COLUMNS}, pending) VALUES (%s, %s, -1, -1, '', '', '[]', '[]', %s::jsonb) "
            "ON CONFLICT (source) DO UPDATE SET pending = excluded.pending"
        ).format(self._files)
        with self._errors("write"), self._conn.cursor() as cursor:
            cursor.executemany(statement, rows)

    def touch(self, source: str, root: str, size: int, mtime_ns: int) -> None:
        from psycopg import sql

        statement = sql.SQL("UPDATE {} SET size = %s, mtime_ns = %s, root = %s WHERE source = %s")
        self._run(statement.format(self._files), (size, mtime_ns, root, source))

    def remove(self, source: str) -> None:
        from psycopg import sql

        self._run(sql.SQL("DELETE FROM {} WHERE source = %s").format(self._files), (source,))

    def forget_ids(self, source: str, ids: Iterable[str]) -> None:
        from psycopg import sql

        entry = self.get(source)
        if entry is None:
            return
        gone = set(ids)
        kept = [(i, d) for i, d in zip(entry.chunk_ids, entry.digests, strict=False) if i not in gone]
        statement = sql.SQL(
            "UPDATE {} SET chunk_ids = %s::jsonb, digests = %s::jsonb, size = -1, sha256 = '' "
            "WHERE source = %s"
        ).format(self._files)
        self._run(statement, (json.dumps([i for i, _ in kept]), json.dumps([d for _, d in kept]), source))

    def reconcile(self) -> int:
        from psycopg import sql

        rows = self._run(
            sql.SQL("SELECT source, chunk_ids, pending FROM {} WHERE pending IS NOT NULL").format(self._files)
        ).fetchall()
        for source, ids, pending in rows:
            merged = list(ids)
            known = set(merged)
            merged.extend(i for i in pending if i not in known)
            statement = sql.SQL(
                "UPDATE {} SET chunk_ids = %s::jsonb, digests = %s::jsonb, pending = NULL, size = -1, "
                "sha256 = '' WHERE source = %s"
            ).format(self._files)
            self._run(statement, (json.dumps(merged), json.dumps([""] * len(merged)), source))
        return len(rows)

    def get_meta(self, key: str) -> str | None:
        from psycopg import sql

        row = self._run(sql.SQL("SELECT value FROM {} WHERE key = %s").format(self._meta), (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        from psycopg import sql

        statement = sql.SQL(
            "INSERT INTO {} (key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ).format(self._meta)
        self._run(statement, (key, value))
