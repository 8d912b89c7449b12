"""The ingestion manifest: what each ingested file looked like and which chunk ids it put in the store.

A SQLite file (stdlib, atomic commits, write-ahead log) kept next to the store. The pipeline records the
ids a file is about to write as *pending* before writing them, and replaces the row only after the
store holds them, so a run killed at any point leaves a manifest the next run can reconcile: pending ids
are merged into the file's ids and the file is processed again, which removes whatever is stale.

Source identity: every folder ingested is recorded as a *root* with a short label (its folder name,
made unique: `docs`, `docs-2`), and a file's source id is `<label>/<path relative to the root>`. So two
folders that both hold `README.md` stay two sources, and one file reached from two starting paths is
one. A manifest written before roots existed (keyed by the relative path alone, with the root's
absolute path beside it) is migrated when opened: each old root becomes a recorded root.

Example:
    >>> m = Manifest(":memory:")
    >>> label = m.add_root("/srv/docs")
    >>> m.put(ManifestEntry(f"{label}/a.md", label, 10, 1, "ab12", "k", ("id1",), ("d1",)))
    >>> m.commit()
    >>> m.get("docs/a.md").chunk_ids, m.roots()
    (('id1',), {'docs': '/srv/docs'})
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from rag.errors import StoreError

__all__ = ["Manifest", "ManifestEntry", "ManifestState"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    source    TEXT PRIMARY KEY,
    root      TEXT NOT NULL,
    size      INTEGER NOT NULL,
    mtime_ns  INTEGER NOT NULL,
    sha256    TEXT NOT NULL,
    settings  TEXT NOT NULL,
    chunk_ids TEXT NOT NULL,
    digests   TEXT NOT NULL,
    pending   TEXT
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roots (label TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE);
"""
# Version 1 (no `roots` table): `files.source` was the path relative to the root and `files.root` the
# root's absolute path. Version 2: `files.source` is `<label>/<relative path>` and `files.root` the label.
SCHEMA_VERSION = 2
_COLUMNS = "source, root, size, mtime_ns, sha256, settings, chunk_ids, digests"


@dataclass(frozen=True)
class ManifestEntry:
    """One ingested file: its source id and root label, its size, mtime and hash, the settings used,
    and its chunks.

    `source` is the source id `<root label>/<relative path>`; `digests[i]` fingerprints chunk
    `chunk_ids[i]` with its metadata, so a changed file rewrites only
    the chunks that really changed.
    """

    source: str
    root: str
    size: int
    mtime_ns: int
    sha256: str
    settings: str
    chunk_ids: tuple[str, ...]
    digests: tuple[str, ...]

    @property
    def relative(self) -> str:
        """The path relative to the root (the chunks' `source` metadata)."""
        return self.source[len(self.root) + 1 :] if self.source.startswith(self.root + "/") else self.source


class ManifestState(NamedTuple):
    """A file's record without its chunk ids: enough to tell whether it changed."""

    source: str
    root: str
    size: int
    mtime_ns: int
    sha256: str
    settings: str
    n_chunks: int


def new_root_label(path: str, taken: Iterable[str]) -> str:
    """A label for the root folder `path`: its name, with `-2`, `-3`... added while `taken` has it."""
    base = os.path.basename(path.rstrip("/\\")) or "root"
    used = set(taken)
    label, n = base, 1
    while label in used:
        n += 1
        label = f"{base}-{n}"
    return label


def _entry(row: tuple[str, str, int, int, str, str, str, str]) -> ManifestEntry:
    source, root, size, mtime_ns, sha256, settings, ids, digests = row
    return ManifestEntry(
        source, root, size, mtime_ns, sha256, settings, tuple(json.loads(ids)), tuple(json.loads(digests))
    )


class Manifest:
    """Per-file records of an ingested collection, in SQLite. Nothing is durable until `commit()`.

    Example:
        >>> with Manifest(":memory:") as m:
        ...     m.mark_pending("a.md", "/docs", ["id1"])
        ...     m.reconcile()  # as after a crash: the pending ids now belong to the file
        1
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the ingestion manifest {self.path!r}: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._migrate()
        except BaseException as exc:
            self._db.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot open the ingestion manifest {self.path!r}: {exc}") from exc
            raise

    def _migrate(self) -> None:
        """Bring a manifest of an older layout to `SCHEMA_VERSION`, in one transaction."""
        version = self.get_meta("schema_version")
        if version == str(SCHEMA_VERSION):
            return
        if version is None:
            old_roots = [row[0] for row in self._db.execute("SELECT DISTINCT root FROM files ORDER BY root")]
            for path in old_roots:
                # Roots are compared with links resolved now; the old code kept the path as given.
                label = self.add_root(os.path.realpath(path))
                self._db.execute(
                    "UPDATE files SET source = ? || '/' || source, root = ? WHERE root = ?",
                    (label, label, path),
                )
        else:
            raise StoreError(
                f"the ingestion manifest {self.path!r} has schema version {version}; this version of "
                f"rag-advisors reads version {SCHEMA_VERSION} and older"
            )
        self.set_meta("schema_version", str(SCHEMA_VERSION))
        self._db.commit()

    def roots(self) -> dict[str, str]:
        """Every recorded root: label -> absolute folder path."""
        return dict(self._db.execute("SELECT label, path FROM roots ORDER BY label").fetchall())

    def add_root(self, path: str) -> str:
        """Record `path` (an absolute folder) as a root and return its label (the existing one if known).

        The label is the folder's name, with `-2`, `-3`... added when another root has that name.
        """
        row = self._db.execute("SELECT label FROM roots WHERE path = ?", (path,)).fetchone()
        if row is not None:
            return str(row[0])
        taken = {label for (label,) in self._db.execute("SELECT label FROM roots")}
        label = new_root_label(path, taken)
        self._db.execute("INSERT INTO roots (label, path) VALUES (?, ?)", (label, path))
        return label

    def find(self, relative: str, root: str | None = None) -> list[ManifestEntry]:
        """The records whose relative path is `relative` (under the root labelled `root`, when given).

        Chunks written before roots existed carry no `root` metadata; this finds their file anyway.
        """
        if root is not None:
            entry = self.get(f"{root}/{relative}")
            return [] if entry is None else [entry]
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM files WHERE source = root || '/' || ? ORDER BY source", (relative,)
        )
        return [_entry(row) for row in rows]

    def __enter__(self) -> Manifest:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the database; uncommitted changes are dropped."""
        self._db.close()

    def commit(self) -> None:
        """Make every change so far durable, atomically."""
        self._db.commit()

    def entries(self) -> dict[str, ManifestEntry]:
        """Every committed-or-pending file record by source (pending ids not included)."""
        rows = self._db.execute(f"SELECT {_COLUMNS} FROM files ORDER BY source")
        return {row[0]: _entry(row) for row in rows}

    def states(self) -> dict[str, ManifestState]:
        """Every file's record without chunk ids (cheap: what an unchanged re-run reads)."""
        rows = self._db.execute(
            "SELECT source, root, size, mtime_ns, sha256, settings, json_array_length(chunk_ids) FROM files"
        )
        return {row[0]: ManifestState(*row) for row in rows}

    def get(self, source: str) -> ManifestEntry | None:
        """The record of one source, or None."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM files WHERE source = ?", (source,)).fetchone()
        return None if row is None else _entry(row)

    def put(self, entry: ManifestEntry) -> None:
        """Record a file whose chunks the store now holds (clears its pending ids)."""
        self.put_many([entry])

    def put_many(self, entries: Iterable[ManifestEntry]) -> None:
        """`put` for several files in one statement (a batch of small files costs one round trip)."""
        rows = [
            (
                entry.source,
                entry.root,
                entry.size,
                entry.mtime_ns,
                entry.sha256,
                entry.settings,
                json.dumps(list(entry.chunk_ids)),
                json.dumps(list(entry.digests)),
            )
            for entry in entries
        ]
        self._db.executemany(
            f"INSERT OR REPLACE INTO files ({_COLUMNS}, pending) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)", rows
        )

    def mark_pending(self, source: str, root: str, chunk_ids: Iterable[str]) -> None:
        """Note ids about to be written for `source`, before writing them."""
        self.mark_pending_many([(source, root, chunk_ids)])

    def mark_pending_many(self, files: Iterable[tuple[str, str, Iterable[str]]]) -> None:
        """`mark_pending` for several `(source, root, chunk_ids)` in two statements."""
        rows = [(source, root, json.dumps(list(chunk_ids))) for source, root, chunk_ids in files]
        # A file seen for the first time gets a placeholder row that never matches a real file (size -1);
        # then every row, new or old, gets its pending ids. Works on any SQLite (no UPSERT needed).
        self._db.executemany(
            f"INSERT OR IGNORE INTO files ({_COLUMNS}, pending) VALUES (?, ?, -1, -1, '', '', '[]', '[]', ?)",
            rows,
        )
        updates = [(pending, source) for source, _, pending in rows]
        self._db.executemany("UPDATE files SET pending = ? WHERE source = ?", updates)

    def touch(self, source: str, root: str, size: int, mtime_ns: int) -> None:
        """Update the size, mtime and root of a file whose content hash did not change."""
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, root = ? WHERE source = ?",
            (size, mtime_ns, root, source),
        )

    def remove(self, source: str) -> None:
        """Forget a file."""
        self._db.execute("DELETE FROM files WHERE source = ?", (source,))

    def forget_ids(self, source: str, ids: Iterable[str]) -> None:
        """Drop some chunk ids from a file's record (deleted from the store by hand).

        The file is marked for processing again, so the next run restores what the file still holds.
        """
        entry = self.get(source)
        if entry is None:
            return
        gone = set(ids)
        kept = [(i, d) for i, d in zip(entry.chunk_ids, entry.digests, strict=False) if i not in gone]
        self._db.execute(
            "UPDATE files SET chunk_ids = ?, digests = ?, size = -1, sha256 = '' WHERE source = ?",
            (json.dumps([i for i, _ in kept]), json.dumps([d for _, d in kept]), source),
        )

    def reconcile(self) -> int:
        """After an interrupted run: fold pending ids into their files and mark those files for processing.

        Returns how many files were pending.
        """
        rows = self._db.execute(
            "SELECT source, chunk_ids, pending FROM files WHERE pending IS NOT NULL"
        ).fetchall()
        for source, ids_json, pending_json in rows:
            ids = list(json.loads(ids_json))
            known = set(ids)
            ids.extend(i for i in json.loads(pending_json) if i not in known)
            # Digests of the merged list are unknown: empty ones never match, so every chunk is rewritten.
            self._db.execute(
                "UPDATE files SET chunk_ids = ?, digests = ?, pending = NULL, size = -1, sha256 = '' "
                "WHERE source = ?",
                (json.dumps(ids), json.dumps([""] * len(ids)), source),
            )
        return len(rows)

    def get_meta(self, key: str) -> str | None:
        """A free-form value stored with the manifest."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store a free-form value with the manifest."""
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
